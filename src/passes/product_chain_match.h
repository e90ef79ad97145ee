// Predicates of a pass that fuses a chain of ingot.FusedMatMul and LayerNormalization nodes into
// one op (fuse_classifier_head): which products and LayerNorms such an op can take, and the
// intermediates it may swallow.
#pragma once

#include <string>
#include <vector>

#include "ir/graph_editor.h"
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {

// The widest second product (the logits) a classifier head takes: the CUDA kernel's widest
// (gemm_impl.h's kSkinnyMaxN).
constexpr int64_t kMaxLogits = 8;

// Whether v, a LayerNorm's output, may be the input of a classifier head fuse_classifier_head
// takes: read by one FusedMatMul alone whose output, directly or through a Tanh or Relu, a
// FusedMatMul of at most kMaxLogits constant columns reads. Looser than the match itself, so a
// pass before it that would hide such a LayerNorm (fold_layer_norm_into_product, which folds it
// into the product before it) can leave it to the head, which takes more around it.
inline bool may_feed_classifier_head(const GraphEditor& ed, ValueId v) {
  const auto& readers = ed.consumers(v);
  if (readers.size() != 1 || !is_op(ed.node(readers[0]), "FusedMatMul", "ingot")) return false;
  auto logits_of = [&](ValueId h) {
    for (int c : ed.consumers(h)) {
      const Node& second = ed.node(c);
      const Tensor* w = second.inputs.size() > 1 ? ed.constant(second.inputs[1]) : nullptr;
      if (w && is_op(second, "FusedMatMul", "ingot") && second.inputs[0] == h && w->rank() == 2 &&
          w->dim(1) <= kMaxLogits)
        return true;
    }
    return false;
  };
  const ValueId h = ed.node(readers[0]).outputs.empty() ? kNoValue : ed.node(readers[0]).outputs[0];
  if (h == kNoValue) return false;
  if (logits_of(h)) return true;
  for (int c : ed.consumers(h))
    if ((is_op(ed.node(c), "Tanh") || is_op(ed.node(c), "Relu")) && !ed.node(c).outputs.empty() &&
        ed.node(c).outputs[0] != kNoValue && logits_of(ed.node(c).outputs[0]))
      return true;
  return false;
}

class ProductChainMatcher {
 public:
  ProductChainMatcher(const GraphEditor& ed, const std::vector<ValueMeta>* metas) : ed_(ed), metas_(metas) {}

 protected:
  static bool absent(const Node& n, size_t i) { return n.inputs.size() <= i || n.inputs[i] == kNoValue; }
  // A FusedMatMul such an op can take: constant 2-D W, no residual and no LayerNorm; the first
  // writes its input's dtype with any activation the fused op knows, the second has no activation.
  bool product(const Node& n, bool first) const {
    if (!is_op(n, "FusedMatMul", "ingot") || n.inputs.size() < 2 || !absent(n, 3) || !absent(n, 4) ||
        n.outputs.size() != 1)
      return false;
    const Tensor* w = ed_.constant(n.inputs[1]);
    if (!w || w->rank() != 2 || w->numel() == 0) return false;
    if (!absent(n, 2) && !ed_.constant(n.inputs[2])) return false;
    const std::string act = n.attrs.get_string("activation", "");
    if (!first) return act.empty();
    return n.attrs.get_int("output_dtype", 0) == 0 &&
           (act.empty() || act == "Relu" || act == "Gelu" || act == "GeluTanh");
  }

  bool layer_norm(const Node& n) const {
    if (n.inputs.size() < 2 || !ed_.constant(n.inputs[1]) || (!absent(n, 2) && !ed_.constant(n.inputs[2])))
      return false;
    for (size_t o = 1; o < n.outputs.size(); ++o)
      if (n.outputs[o] != kNoValue && !ed_.consumers(n.outputs[o]).empty()) return false;
    if (n.attrs.get_int("stash_type", 1) != 1) return false;
    const int64_t axis = n.attrs.get_int("axis", -1);
    if (axis == -1) return true;
    const ValueMeta* x = meta(n.inputs[0]);
    return x && int64_t(x->shape.size()) == axis + 1;
  }

  // v is read by `reader` alone, is no graph output and no subgraph reads it.
  bool intermediate(ValueId v, int reader) const {
    return v != kNoValue && ed_.only_feeds(v, reader) && !ed_.read_by_subgraph(v);
  }

  bool vector_of(ValueId v, int64_t n) const {
    const Tensor* t = ed_.constant(v);
    return t && t->rank() == 1 && t->numel() == n;
  }
  bool same_shape(ValueId v, const Tensor& like) const {
    const Tensor* t = ed_.constant(v);
    return t && t->shape() == like.shape();
  }

  const ValueMeta* meta(ValueId v) const {
    if (!metas_ || v == kNoValue || size_t(v) >= metas_->size() || !(*metas_)[size_t(v)].known) return nullptr;
    return &(*metas_)[size_t(v)];
  }
  DType dtype_of(ValueId v) const {
    if (const Tensor* t = ed_.constant(v)) return t->dtype();
    if (const ValueMeta* m = meta(v)) return m->dtype;
    return ed_.graph().value(v).dtype;
  }

  const GraphEditor& ed_;
  const std::vector<ValueMeta>* metas_;
};

}  // namespace ingot
