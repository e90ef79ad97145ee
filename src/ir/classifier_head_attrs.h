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
  // The transformer's last feed-forward block before the head (inputs 7 to 12 present).
  bool ffn = false;
  float ffn_epsilon = 1e-5f;
  HeadActivation ffn_act = HeadActivation::kNone;  // "", Relu, Gelu or GeluTanh
  // The attention's output projection and residual before the block (inputs 13 to 15 present):
  // X is then the attention's context, and the residual's rows are at this position of its
  // sequence axis (negative: from the end).
  bool projection = false;
  int64_t residual_position = 0;
};

// The inputs of ingot.ClassifierHead (backends/cpu/classifier_head.cc has the op's contract).
enum HeadInput {
  kHeadX, kHeadGamma, kHeadBeta, kHeadW1, kHeadB1, kHeadW2, kHeadB2,
  kFfnGamma, kFfnBeta, kFfnW1, kFfnB1, kFfnW2, kFfnB2,
  kProjW, kProjB, kProjResidual,
  kHeadInputs
};

// Errors name the attribute: activation "", "Relu", "Tanh", "Gelu" or "GeluTanh"; epsilon >= 0;
// output_dtype 0 or 1 (float32); ffn_activation "", "Relu", "Gelu" or "GeluTanh" and
// ffn_epsilon >= 0 when the node has the feed-forward inputs (7 to 12; 7, 9 and 11 needed then);
// with the projection's (13 to 15), 13 and 15 are needed and the feed-forward block too.
Expected<ClassifierHeadSpec> parse_classifier_head(const Node& node);

// The activation's name as the attribute spells it ("" for none).
const char* head_activation_name(HeadActivation act);

}  // namespace ingot
