// parse_attention_attrs (attention_attrs.h).
#include "ir/attention_attrs.h"

#include <limits>
#include <string>

namespace ingot {

Expected<AttentionAttrs> parse_attention_attrs(const Node& node) {
  AttentionAttrs a;
  a.heads = node.attrs.get_int("num_heads", 0);
  if (a.heads <= 0) return invalid_model("attribute num_heads must be positive, got " + std::to_string(a.heads));
  a.scale = node.attrs.get_float("scale", 1.f);
  a.causal = node.attrs.get_int("causal", 0) != 0;
  a.nan_to_zero = node.attrs.get_int("nan_to_zero", 0) != 0;
  a.filter = node.attrs.get_float("mask_filter_value", -std::numeric_limits<float>::infinity());
  const std::string kind = node.attrs.get_string("mask_kind", "none");
  if (kind == "none") a.mask_kind = AttentionMaskKind::kNone;
  else if (kind == "add") a.mask_kind = AttentionMaskKind::kAdd;
  else if (kind == "bool") a.mask_kind = AttentionMaskKind::kBool;
  else return invalid_model("attribute mask_kind '" + kind + "' is not none, add or bool");
  if (const Attribute* q = node.attrs.find("query_rows")) {
    if (q->kind != Attribute::Kind::kInts || q->ints.empty())
      return invalid_model("attribute query_rows must be a non-empty list of ints");
    a.query_rows = q->ints;
  }
  const std::string residual_rows = node.attrs.get_string("residual_rows", "output");
  if (residual_rows == "query") a.residual_at_query_rows = true;
  else if (residual_rows != "output")
    return invalid_model("attribute residual_rows '" + residual_rows + "' is not output or query");
  a.norm_epsilon = node.attrs.get_float("norm_epsilon", 1e-5f);
  if (!(a.norm_epsilon >= 0))
    return invalid_model("attribute norm_epsilon is " + std::to_string(a.norm_epsilon) + "; expected >= 0");
  return a;
}

Expected<std::vector<int64_t>> attention_query_positions(const AttentionAttrs& a, int64_t S) {
  std::vector<int64_t> pos;
  if (a.query_rows.empty()) {
    for (int64_t i = 0; i < S; ++i) pos.push_back(i);
    return pos;
  }
  for (int64_t r : a.query_rows) {
    if (r < -S || r >= S)
      return invalid_argument("query row " + std::to_string(r) + " (attribute query_rows) is outside [-" +
                              std::to_string(S) + ", " + std::to_string(S) + ") for sequence length " +
                              std::to_string(S));
    pos.push_back(r < 0 ? r + S : r);
  }
  return pos;
}

}  // namespace ingot
