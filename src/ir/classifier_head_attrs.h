// The attributes of ingot.ClassifierHead (the op's contract is at the top of
// backends/cpu/classifier_head.cc), parsed once for every backend's kernel.
#pragma once

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

// The activation between the head's two products.
enum class HeadActivation { kNone, kRelu, kTanh, kGeluErf, kGeluTanh };

struct ClassifierHeadSpec {
  float epsilon = 1e-5f;
  HeadActivation act = HeadActivation::kNone;
  bool float_output = false;  // output_dtype 1: Y in float32 whatever X's dtype
};

// Errors name the attribute: activation "", "Relu", "Tanh", "Gelu" or "GeluTanh"; epsilon >= 0;
// output_dtype 0 or 1 (float32).
Expected<ClassifierHeadSpec> parse_classifier_head(const Node& node);

// The activation's name as the attribute spells it ("" for none).
const char* head_activation_name(HeadActivation act);

}  // namespace ingot
