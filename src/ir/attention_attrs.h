// The attributes of ingot.Attention (the op's contract is at the top of
// backends/cpu/attention.cc), parsed once for every backend's kernel.
#pragma once

#include <cstdint>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

enum class AttentionMaskKind { kNone, kAdd, kBool };

struct AttentionAttrs {
  int64_t heads = 0;
  float scale = 1.f;
  float filter = 0.f;  // added where a bool mask is false
  bool causal = false, nan_to_zero = false;
  AttentionMaskKind mask_kind = AttentionMaskKind::kNone;
};

// Errors name the attribute: num_heads must be positive, mask_kind none, add or bool.
Expected<AttentionAttrs> parse_attention_attrs(const Node& node);

}  // namespace ingot
