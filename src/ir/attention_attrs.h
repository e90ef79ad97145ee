// The attributes of ingot.Attention (the op's contract is at the top of
// backends/cpu/attention.cc), parsed once for every backend's kernel.
#pragma once

#include <cstdint>
#include <vector>

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
  // query_rows: the query positions whose output rows are computed, in output order (negative:
  // from the end); empty: every position.
  std::vector<int64_t> query_rows;
  // residual_rows "query": the residual (input 6) is [B, S, M], the full sequence, and the rows
  // at the query positions are added (the classifier token's residual read in place, without a
  // Gather); default "output": the residual has the output's shape.
  bool residual_at_query_rows = false;
  // norm_epsilon: the epsilon of the LayerNorm inputs 7 (norm_gamma) and 8 (norm_beta) apply to
  // the output.
  float norm_epsilon = 1e-5f;
};

// Errors name the attribute: num_heads must be positive, mask_kind none, add or bool,
// norm_epsilon >= 0.
Expected<AttentionAttrs> parse_attention_attrs(const Node& node);

// The output's query positions for sequence length S: query_rows resolved into [0, S), or every
// position when query_rows is empty. An index outside [-S, S) is an error naming it.
Expected<std::vector<int64_t>> attention_query_positions(const AttentionAttrs& a, int64_t S);
// Dtypes a mask_kind "bool" mask may have: bool, or an integer type read as "nonzero = attend"
// (simplify_attention_mask hands the op an int64 attention_mask instead of its Cast to bool).
inline bool attention_bool_mask_dtype(DType t) {
  return t == DType::kBool || t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt8 || t == DType::kUInt8;
}
// Output rows per batch: query_rows' count, or S.
inline int64_t attention_query_count(const AttentionAttrs& a, int64_t S) {
  return a.query_rows.empty() ? S : int64_t(a.query_rows.size());
}

}  // namespace ingot
