// CUDA engines only: a LayerNormalization of a matrix product's output goes into the product,
// which then normalises its own rows before it writes them:
//
//   S = FusedMatMul(A, W, b[, R])                 or  Attention(..., W_out, b_out[, R])
//   Y = LayerNormalization(S, gamma[, beta])
//   →  Y = FusedMatMul(A, W, b, R, gamma, beta)   or  Attention(..., W_out, b_out, R, gamma, beta)
//      (FusedMatMul inputs 4-5, Attention inputs 7-8: norm_gamma, norm_beta),
//      attribute norm_epsilon = the LayerNorm's epsilon (default 1e-5)
//
// Most of these LayerNorms are the ones fold_residual_into_product (just before) leaves after
// moving a SkipLayerNorm's residual into P. On CUDA the LayerNorm then runs in the product's
// epilogue: one kernel fewer and no pass over S (a product of BERT-base at b32 writes 12.6 MB
// that a separate LayerNorm would read back and write again, 24 of them). Where ingot's fused
// kernel does not take the shape, the product's kernel runs the LayerNorm over its output in
// place (one node still, no S buffer). CPU engines keep the node: their kernels normalise after
// the product anyway (the norm inputs are there for fallback and reference).
//
// Taken when:
// - P has one output S, read by the LayerNorm alone, no graph output and no subgraph's: P
//   writes only the normalised rows, S is gone;
// - the LayerNorm normalises the last axis only (axis -1 or rank - 1): the epilogue normalises
//   rows of P's last dim;
// - its Mean and InvStdDev outputs are absent or unread: P does not write them;
// - gamma (and beta) have S's dtype and known shape exactly [H], H = S's last dim: what P's
//   norm inputs take (no broadcast from [1]);
// - a FusedMatMul has no activation and writes its inputs' dtype (output_dtype 0): the
//   LayerNorm follows the sum, and the kernels refuse it with either; a residual or bias is fine;
// - an Attention has its output projection (W_out, input 4; without it the output is the heads'
//   concatenation, not a product's rows) and no query_rows (a classifier's last layer: its
//   LayerNorm begins the block fuse_classifier_head takes);
// - P's norm inputs are free (no earlier fold);
// - no classifier head may read Y (may_feed_classifier_head): fuse_classifier_head, later,
//   starts from such a LayerNorm and takes it, the products and the block around it as one node.
// CUDA's kernels take float32, float16 and bfloat16 either way: no other dtype condition.
// Rounding: CUDA's kernels round the sum to P's dtype before they normalise it, as the unfused
// product stores it; the CPU kernels (fallback and reference) do not.
#include <algorithm>
#include <string>
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"
#include "passes/product_chain_match.h"

namespace ingot {
namespace {

bool absent(const Node& n, size_t i) { return n.inputs.size() <= i || n.inputs[i] == kNoValue; }

// The index of P's norm_gamma input (norm_beta follows it) when P may take a LayerNorm of its
// output, else -1.
int gamma_slot(const Node& p) {
  if (p.outputs.size() != 1) return -1;
  if (is_op(p, "FusedMatMul", "ingot")) {
    if (!p.attrs.get_string("activation", "").empty() || p.attrs.get_int("output_dtype", 0) != 0) return -1;
    return absent(p, 4) && absent(p, 5) ? 4 : -1;
  }
  if (is_op(p, "Attention", "ingot")) {
    if (absent(p, 4) || p.attrs.has("query_rows")) return -1;
    return absent(p, 7) && absent(p, 8) ? 7 : -1;
  }
  return -1;
}

class FoldLayerNormIntoProduct : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    if (ctx.device() != "cuda") return 0;
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    if (!metas) return 0;  // S's rank and last dim, gamma's and beta's shapes must be known
    auto meta = [&](ValueId v) -> const ValueMeta* {
      if (v == kNoValue || size_t(v) >= metas->size()) return nullptr;
      const ValueMeta& m = (*metas)[size_t(v)];
      return m.known && !m.dynamic ? &m : nullptr;
    };
    GraphEditor ed(model.graph);
    int folded = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "LayerNormalization")) continue;
      const Node& ln = ed.node(i);
      if (ln.inputs.size() < 2 || ln.inputs[0] == kNoValue || ln.inputs[1] == kNoValue || ln.outputs.empty() ||
          ln.outputs[0] == kNoValue)
        continue;
      const ValueId s = ln.inputs[0], y = ln.outputs[0];
      // Mean and InvStdDev: P does not write them.
      bool stats_read = false;
      for (size_t k = 1; k < ln.outputs.size(); ++k) {
        const ValueId o = ln.outputs[k];
        stats_read |= o != kNoValue && (!ed.consumers(o).empty() || ed.is_graph_output(o) || ed.read_by_subgraph(o));
      }
      if (stats_read) continue;
      // S: P's one output, read by this LayerNorm alone.
      const int p = ed.producer(s);
      if (p < 0 || !ed.alive(p) || !ed.only_feeds(s, i) || ed.read_by_subgraph(s)) continue;
      const int slot = gamma_slot(ed.node(p));
      if (slot < 0) continue;
      // The last axis only, gamma and beta exactly [H] in S's dtype.
      const ValueMeta* sm = meta(s);
      if (!sm || sm->shape.empty()) continue;
      const int64_t rank = int64_t(sm->shape.size()), axis = ln.attrs.get_int("axis", -1);
      if (axis != -1 && axis != rank - 1) continue;
      bool params_fit = true;
      for (size_t k = 1; k < 3; ++k) {
        if (k == 2 && absent(ln, 2)) continue;
        const ValueMeta* pm = meta(ln.inputs[k]);
        params_fit &= pm && pm->dtype == sm->dtype && pm->shape == Shape{sm->shape.back()};
      }
      if (!params_fit || may_feed_classifier_head(ed, y)) continue;

      Node product = ed.node(p);
      product.inputs.resize(std::max(product.inputs.size(), size_t(slot) + 1), kNoValue);
      product.inputs[size_t(slot)] = ln.inputs[1];
      if (!absent(ln, 2)) {
        product.inputs.resize(std::max(product.inputs.size(), size_t(slot) + 2), kNoValue);
        product.inputs[size_t(slot) + 1] = ln.inputs[2];
      }
      product.attrs.set_float("norm_epsilon", ln.attrs.get_float("epsilon", 1e-5f));
      product.outputs[0] = y;
      ed.remove_node(i);
      ed.remove_node(p);
      ed.add_node(std::move(product));
      ++folded;
    }
    ed.commit();
    if (folded) ctx.note(std::to_string(folded) + " LayerNorm(s) folded into their product's epilogue");
    return folded;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fold_layer_norm_into_product", FoldLayerNormIntoProduct);

}  // namespace ingot
