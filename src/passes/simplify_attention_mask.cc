// Hands ingot.Attention its mask before the broadcasts the exporters wrap it in. The op
// broadcasts its mask to [B, heads, S, S] itself, so for its mask input
//   Expand(X, shape)  is replaced by X, and
//   And(X, T)         by X when T is true everywhere: a true constant (ConstantOfShape(true)
//                     too), or GreaterOrEqual / Greater of values with a provable lower bound
//                     (a Range with a positive step, reshaped) against a constant.
// transformers 5 builds BERT-style padding masks as And(q_idx >= 0, padding[b, kv_idx]) and
// expands the result to [B, 1, S, S]; after this pass the kernel reads the [B, 1, 1, S] padding
// mask itself, which the CUDA flash kernel stages once per (batch, head) instead of reading one
// mask element per score, and the And and Expand passes over B·S² elements are gone.
//
// The replacement reads the same mask values: X broadcasts to the removed node's output, which
// broadcasts to the scores, so X broadcasts to the scores (and its rank is no higher). The mask
// value itself is never rewritten, only the Attention's input, so other readers keep it.
#include <cmath>
#include <limits>
#include <optional>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

constexpr int kMaskInput = 3;  // ingot.Attention's inputs: X, W_qkv, b_qkv, mask, W_out, b_out
constexpr int kMaxDepth = 12;  // producer chains followed; the exporters' are 3-5 deep

// Ops that move or replicate elements without changing any value.
bool is_value_preserving(const Node& n) {
  for (const char* op : {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Identity"})
    if (is_op(n, op)) return true;
  return false;
}

// The smallest value v can hold, when provable.
std::optional<double> lower_bound(const GraphEditor& ed, ValueId v, int depth) {
  if (v == kNoValue || depth > kMaxDepth) return std::nullopt;
  if (const Tensor* t = ed.constant(v)) {
    if (t->numel() == 0) return std::nullopt;
    double lo = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < t->numel(); ++i) lo = std::min(lo, t->scalar_as_double(i));
    return std::isnan(lo) ? std::nullopt : std::optional<double>(lo);
  }
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p)) return std::nullopt;
  const Node& n = ed.node(p);
  if (is_value_preserving(n)) return lower_bound(ed, n.inputs[0], depth + 1);
  if (is_op(n, "Range") && n.inputs.size() == 3) {
    auto start = scalar_constant(ed, n.inputs[0]), step = scalar_constant(ed, n.inputs[2]);
    if (start && step && *step > 0) return start;  // start, start + step, ... (or nothing)
  }
  return std::nullopt;
}

bool all_true(const GraphEditor& ed, ValueId v, int depth) {
  if (v == kNoValue || depth > kMaxDepth) return false;
  if (const Tensor* t = ed.constant(v)) {
    if (t->dtype() != DType::kBool || t->numel() == 0) return false;
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!t->data<bool>()[i]) return false;
    return true;
  }
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p)) return false;
  const Node& n = ed.node(p);
  if (is_value_preserving(n)) return all_true(ed, n.inputs[0], depth + 1);
  if (is_op(n, "And") && n.inputs.size() == 2) return all_true(ed, n.inputs[0], depth + 1) && all_true(ed, n.inputs[1], depth + 1);
  if (is_op(n, "ConstantOfShape")) {
    const Tensor* t = n.attrs.get_tensor("value");  // absent: float32 zeros
    return t && t->dtype() == DType::kBool && t->numel() == 1 && t->data<bool>()[0];
  }
  const bool ge = is_op(n, "GreaterOrEqual"), gt = is_op(n, "Greater");
  if ((ge || gt) && n.inputs.size() == 2) {
    auto lo = lower_bound(ed, n.inputs[0], depth + 1);
    auto c = scalar_constant(ed, n.inputs[1]);
    return lo && c && (ge ? *lo >= *c : *lo > *c);
  }
  return false;
}

// The value the mask `m` broadcasts, when the node producing it only broadcasts it; else kNoValue.
ValueId unwrapped(const GraphEditor& ed, ValueId m) {
  const int p = ed.producer(m);
  if (p < 0 || !ed.alive(p)) return kNoValue;
  const Node& n = ed.node(p);
  if (is_op(n, "Expand") && n.inputs.size() == 2) return n.inputs[0];
  if (is_op(n, "And") && n.inputs.size() == 2) {
    if (all_true(ed, n.inputs[1], 0)) return n.inputs[0];
    if (all_true(ed, n.inputs[0], 0)) return n.inputs[1];
  }
  return kNoValue;
}

class SimplifyAttentionMask : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    GraphEditor ed(model.graph);
    int rewrites = 0;
    const int count = ed.num_nodes();
    for (int i = 0; i < count; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "Attention", "ingot")) continue;
      if (ed.node(i).inputs.size() <= size_t(kMaskInput)) continue;
      const ValueId original = ed.node(i).inputs[kMaskInput];
      ValueId mask = original;
      int steps = 0;
      for (ValueId x; mask != kNoValue && steps < kMaxDepth && (x = unwrapped(ed, mask)) != kNoValue; ++steps) mask = x;
      if (mask == original) continue;
      // The editor indexes readers per value: the node is re-added with its new input.
      Node rewired = ed.node(i);
      rewired.inputs[kMaskInput] = mask;
      ed.remove_node(i);
      ed.add_node(std::move(rewired));
      ctx.note("attention mask '" + ed.graph().value(original).name + "' read as '" + ed.graph().value(mask).name +
               "' (" + std::to_string(steps) + " broadcast" + (steps == 1 ? "" : "s") + " left to the kernel)");
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("simplify_attention_mask", SimplifyAttentionMask);

}  // namespace ingot
