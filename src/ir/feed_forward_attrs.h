// The attributes and inputs of ingot.FeedForward (the op's contract is at the top of
// backends/cpu/feed_forward.cc), parsed once for every backend's kernel.
#pragma once

#include "ingot/status.h"
#include "ir/classifier_head_attrs.h"
#include "ir/graph.h"

namespace ingot {

struct FeedForwardSpec {
  HeadActivation act = HeadActivation::kNone;  // "", Relu, Gelu or GeluTanh
  float epsilon = 1e-5f;                       // the closing LayerNorm's
};

enum FeedForwardInput { kFfX, kFfW1, kFfB1, kFfW2, kFfB2, kFfGamma, kFfBeta, kFfInputs };

// Errors name the attribute or input: activation "", "Relu", "Gelu" or "GeluTanh"; epsilon >= 0;
// seven inputs, of which X, W1, W2 and gamma present.
Expected<FeedForwardSpec> parse_feed_forward(const Node& node);

}  // namespace ingot
