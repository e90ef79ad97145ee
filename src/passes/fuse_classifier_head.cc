// CUDA engines only: a sequence classifier's head becomes one ingot.ClassifierHead node.
//
//   Xn = LayerNormalization(X, gamma, beta)        (the last layer's, on the gathered rows)
//   H  = FusedMatMul(Xn, W1, b1, activation a)     or  FusedMatMul(Xn, W1, b1) → Tanh | Relu
//   Y  = FusedMatMul(H, W2, b2)                    N2 = W2's columns ≤ 8 (the logits)
//   →  Y = ClassifierHead(X, gamma, beta, W1, b1, W2, b2, activation a)
//
// When X is the output of the last layer's feed-forward block (post-LN transformers), the block
// joins the node too (absorb_feed_forward below; the op's inputs 7 to 12):
//
//   Hf = LayerNormalization(X0)   G = FusedMatMul(Hf, F1, fb1, act)   X = FusedMatMul(G, F2, fb2, residual Hf)
//   →  Y = ClassifierHead(X0, ..., ffn_gamma, ffn_beta, F1, fb1, F2, fb2)
//
// On a classifier's last layer these run on the gathered rows (gather_rows_early), so at batch 1
// the block is three more one-row kernels the CUDA kernel takes into its launch.
//
// DistilBERT's pre_classifier (ReLU) and BERT's pooler (a Tanh node after it) end this way. At
// batch 1 each of these three or four ops is one kernel over one row whose cost is its launch
// inside the CUDA graph (about 2.5 µs each on an H100); the CUDA kernel of the fused op is one
// launch (backends/cuda/classifier_head.cc). CPU engines keep the ops: there each is a few
// microseconds of arithmetic and no launch.
//
// Taken when every intermediate has one reader and is no graph output; the LayerNorm normalizes
// the last axis with float32 statistics (stash_type 1), has constant gamma (and beta) of K
// elements and only its first output; the products have constant 2-D weights, constant biases
// (or none), no residual, and the first writes its input's dtype; the second has no activation;
// every tensor has X's dtype. Runs after precision conversion (pipeline.cc), so it sees the
// dtypes the engine computes in and the second product's folded float32 output.
// Rounding: a Tanh or Relu node's input was stored in X's dtype before the activation; the
// fused op applies it to the float32 sum and rounds once.
#include <optional>
#include <string>

#include "ir/classifier_head_attrs.h"
#include "passes/match.h"
#include "passes/pass.h"
#include "passes/product_chain_match.h"

namespace ingot {
namespace {

class HeadMatcher : public ProductChainMatcher {
 public:
  using ProductChainMatcher::ProductChainMatcher;

  // The fused node for the second product `f2`, or nullopt when the pattern does not hold.
  std::optional<Node> match(int f2) {
    const Node& second = ed_.node(f2);
    if (!product(second, /*first=*/false)) return std::nullopt;
    const ValueId h = second.inputs[0];
    if (!intermediate(h, f2)) return std::nullopt;
    int f1 = ed_.producer(h);
    if (f1 < 0 || !ed_.alive(f1)) return std::nullopt;
    std::string act;
    if (is_op(ed_.node(f1), "Tanh") || is_op(ed_.node(f1), "Relu")) {
      const Node& unary = ed_.node(f1);
      if (unary.inputs.size() != 1 || !intermediate(unary.inputs[0], f1)) return std::nullopt;
      act = unary.op_type;
      unary_ = f1;
      f1 = ed_.producer(unary.inputs[0]);
      if (f1 < 0 || !ed_.alive(f1) || !ed_.node(f1).attrs.get_string("activation", "").empty()) return std::nullopt;
    }
    const Node& first = ed_.node(f1);
    if (!product(first, /*first=*/true)) return std::nullopt;
    if (act.empty()) act = first.attrs.get_string("activation", "");
    const ValueId xn = first.inputs[0];
    const int ln = producer_if(ed_, xn, "LayerNormalization");
    if (ln < 0 || !intermediate(xn, f1)) return std::nullopt;
    const Node& norm = ed_.node(ln);
    if (!layer_norm(norm)) return std::nullopt;

    const Tensor* w1 = ed_.constant(first.inputs[1]);
    const Tensor* w2 = ed_.constant(second.inputs[1]);
    const Tensor* gamma = ed_.constant(norm.inputs[1]);
    const int64_t K = w1->dim(0), N1 = w1->dim(1);
    if (w2->dim(0) != N1 || w2->dim(1) > kMaxLogits || gamma->numel() != K || gamma->rank() != 1) return std::nullopt;
    if (!absent(norm, 2) && !same_shape(norm.inputs[2], *gamma)) return std::nullopt;
    if (!absent(first, 2) && !vector_of(first.inputs[2], N1)) return std::nullopt;
    if (!absent(second, 2) && !vector_of(second.inputs[2], w2->dim(1))) return std::nullopt;
    const DType t = dtype_of(norm.inputs[0]);
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return std::nullopt;
    for (ValueId v : {norm.inputs[1], norm.inputs.size() > 2 ? norm.inputs[2] : kNoValue, first.inputs[1],
                      first.inputs.size() > 2 ? first.inputs[2] : kNoValue, second.inputs[1],
                      second.inputs.size() > 2 ? second.inputs[2] : kNoValue, xn, h})
      if (v != kNoValue && dtype_of(v) != t) return std::nullopt;

    Node fused;
    fused.name = second.name.empty() ? "classifier_head" : second.name + "/classifier_head";
    fused.op_type = "ClassifierHead";
    fused.domain = "ingot";
    auto input = [](const Node& n, size_t i) { return absent(n, i) ? kNoValue : n.inputs[i]; };
    fused.inputs = {norm.inputs[0], norm.inputs[1], input(norm, 2),  first.inputs[1],
                    input(first, 2), second.inputs[1], input(second, 2)};
    fused.outputs = second.outputs;
    fused.attrs.set_float("epsilon", norm.attrs.get_float("epsilon", 1e-5f));
    fused.attrs.set_string("activation", act);
    if (const Attribute* out = second.attrs.find("output_dtype")) fused.attrs.set("output_dtype", *out);
    removed_ = {f2, f1, ln};
    if (unary_ >= 0) removed_.push_back(unary_);
    absorb_feed_forward(fused, ln, t);
    return fused;
  }

  const std::vector<int>& removed() const { return removed_; }
  // Nodes to replace (the attention that gave its output projection to the fused node).
  std::vector<std::pair<int, Node>>& replaced() { return replaced_; }

 private:
  // The last layer's feed-forward block when it makes the head's input X (post-LN transformers:
  // BERT, DistilBERT), read by the head's LayerNorm alone:
  //   Hf = LayerNormalization(X0)   G = FusedMatMul(Hf, F1, fb1, act)   X = FusedMatMul(G, F2, fb2) + Hf
  // the residual Hf folded into the second product (fold_residual_into_product). Then X0 becomes
  // the fused node's input and the block's weights its inputs 7 to 12.
  void absorb_feed_forward(Node& fused, int head_ln, DType t) {
    const ValueId x = ed_.node(head_ln).inputs[0];
    if (!intermediate(x, head_ln)) return;
    const int p2 = ed_.producer(x);
    if (p2 < 0 || !ed_.alive(p2)) return;
    const Node& second = ed_.node(p2);
    if (!is_op(second, "FusedMatMul", "ingot") || second.inputs.size() != 4 || second.inputs[3] == kNoValue ||
        second.outputs.size() != 1 || !second.attrs.get_string("activation", "").empty() ||
        second.attrs.get_int("output_dtype", 0) != 0)
      return;
    const ValueId g = second.inputs[0], hf = second.inputs[3];
    if (!intermediate(g, p2)) return;
    const int p1 = ed_.producer(g);
    if (p1 < 0 || !ed_.alive(p1)) return;
    const Node& first = ed_.node(p1);
    if (!product(first, /*first=*/true) || first.inputs[0] != hf) return;
    const int ln = producer_if(ed_, hf, "LayerNormalization");
    if (ln < 0 || !layer_norm(ed_.node(ln))) return;
    const auto& readers = ed_.consumers(hf);
    if (readers.size() != 2 || ed_.is_graph_output(hf) || ed_.read_by_subgraph(hf)) return;
    const Node& norm = ed_.node(ln);
    const Tensor* f1 = ed_.constant(first.inputs[1]);
    const Tensor* f2 = ed_.constant(second.inputs[1]);
    const Tensor* gamma = ed_.constant(norm.inputs[1]);
    if (!f2 || f2->rank() != 2) return;
    const int64_t K = f1->dim(0), NF = f1->dim(1);
    // K wider than the logits and whole 16-byte rows: the residual product's condition on CUDA
    // (backends/cuda/gemm.cc), which the fused op's composed path keeps.
    if (f2->dim(0) != NF || f2->dim(1) != K || K <= kMaxLogits || (K * int64_t(dtype_size(t))) % 16 != 0 ||
        gamma->rank() != 1 || gamma->numel() != K)
      return;
    if (!absent(norm, 2) && !same_shape(norm.inputs[2], *gamma)) return;
    if (!absent(first, 2) && !vector_of(first.inputs[2], NF)) return;
    if (!absent(second, 2) && !vector_of(second.inputs[2], K)) return;
    auto input = [](const Node& n, size_t i) { return absent(n, i) ? kNoValue : n.inputs[i]; };
    for (ValueId v : {norm.inputs[0], norm.inputs[1], input(norm, 2), first.inputs[1], input(first, 2), second.inputs[1],
                      input(second, 2), hf, g, x})
      if (v != kNoValue && dtype_of(v) != t) return;
    fused.inputs[kHeadX] = norm.inputs[0];
    for (ValueId v : {norm.inputs[1], input(norm, 2), first.inputs[1], input(first, 2), second.inputs[1], input(second, 2)})
      fused.inputs.push_back(v);
    fused.attrs.set_float("ffn_epsilon", norm.attrs.get_float("epsilon", 1e-5f));
    fused.attrs.set_string("ffn_activation", first.attrs.get_string("activation", ""));
    for (int r : {p2, p1, ln}) removed_.push_back(r);
    absorb_projection(fused, t, ln);
  }

  // The last layer's attention output projection and residual when they make the block's input:
  // X0 = Squeeze(Attention(..., W_out, b_out, R) with one query row) [→ the block]. The
  // attention then outputs its context (W_out [N, M] with N = M, so the Squeeze's shapes stay
  // valid) and the projection and residual become the fused node's inputs 13 to 15, with the
  // query row as residual_position (R is the whole sequence with residual_rows "query", else
  // the query row alone).
  void absorb_projection(Node& fused, DType t, int ffn_ln) {
    const ValueId x0 = fused.inputs[kHeadX];
    const int sq = ed_.producer(x0);
    if (sq < 0 || !ed_.alive(sq) || !is_op(ed_.node(sq), "Squeeze") || !intermediate(x0, ffn_ln)) return;
    const ValueId y = ed_.node(sq).inputs[0];
    const int at = ed_.producer(y);
    if (at < 0 || !ed_.alive(at) || !is_op(ed_.node(at), "Attention", "ingot") || !intermediate(y, sq)) return;
    const Node& attn = ed_.node(at);
    constexpr size_t kWout = 4, kBout = 5, kResidual = 6;
    if (attn.inputs.size() != 7 || attn.inputs[kResidual] == kNoValue || attn.outputs.size() != 1) return;
    const std::vector<int64_t> query = attn.attrs.get_ints("query_rows");
    if (query.size() != 1) return;
    const Tensor* wo = ed_.constant(attn.inputs[kWout]);
    if (!wo || wo->rank() != 2 || wo->dim(0) != wo->dim(1) || wo->dim(1) != ed_.constant(fused.inputs[kFfnW1])->dim(0))
      return;
    if (attn.inputs[kBout] != kNoValue && !vector_of(attn.inputs[kBout], wo->dim(1))) return;
    const bool whole_sequence = attn.attrs.get_string("residual_rows", "output") == "query";
    for (ValueId v : {attn.inputs[kWout], attn.inputs[kBout], attn.inputs[kResidual], y})
      if (v != kNoValue && dtype_of(v) != t) return;
    fused.inputs.push_back(attn.inputs[kWout]);
    fused.inputs.push_back(attn.inputs[kBout]);
    fused.inputs.push_back(attn.inputs[kResidual]);
    fused.attrs.set_int("residual_position", whole_sequence ? query[0] : 0);
    Node context = attn;
    context.inputs.resize(kWout);
    context.attrs = Attributes{};
    for (const auto& [name, a] : attn.attrs.all())
      if (name != "residual_rows") context.attrs.set(name, a);
    replaced_.push_back({at, std::move(context)});
  }

  int unary_ = -1;
  std::vector<int> removed_;
  std::vector<std::pair<int, Node>> replaced_;
};

class FuseClassifierHead : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    if (ctx.device() != "cuda") return 0;
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    int n = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "FusedMatMul", "ingot")) continue;
      HeadMatcher m(ed, metas);
      std::optional<Node> fused = m.match(i);
      if (!fused) continue;
      const bool ffn = fused->inputs.size() > kFfnGamma;
      const size_t head_ops = m.removed().size() - (ffn ? 3 : 0);
      ctx.note("LayerNormalization, two FusedMatMuls" + std::string(head_ops > 3 ? " and an activation" : "") +
               (ffn ? " with the feed-forward block before them (LayerNormalization, two FusedMatMuls)" : "") +
               " fused into ClassifierHead '" + fused->name + "'");
      for (int r : m.removed()) ed.remove_node(r);
      for (auto& [r, node] : m.replaced()) {
        ctx.note("the output projection and residual of Attention '" + node.name + "' moved into ClassifierHead '" +
                 fused->name + "'");
        ed.remove_node(r);
        ed.add_node(std::move(node));
      }
      ed.add_node(std::move(*fused));
      ++n;
    }
    ed.commit();
    return n;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_classifier_head", FuseClassifierHead);

}  // namespace ingot
