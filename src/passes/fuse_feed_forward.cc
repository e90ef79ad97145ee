// CUDA engines only: a post-LN transformer layer's feed-forward block becomes one
// ingot.FeedForward node (the op's contract: backends/cpu/feed_forward.cc):
//
//   G = FusedMatMul(X, W1, b1, activation a)   Z = FusedMatMul(G, W2, b2, residual X)
//   Y = LayerNormalization(Z, gamma, beta)
//   →  Y = FeedForward(X, W1, b1, W2, b2, gamma, beta; activation a, epsilon)
//
// (BERT, DistilBERT and RoBERTa layers after fuse_linear, fuse_layer_norm and
// fold_residual_into_product.) At batch 1 the block is three kernels on 128 rows whose cost in
// a CUDA graph is mostly their launches and the two kernel boundaries into cuBLASLt products,
// which cannot overlap (cuda_dependent_launch.h); as one op, its CUDA kernel decides per shape
// how to run it. CPU engines keep the ops.
//
// Taken when G and Z have one reader each and are no graph outputs; the products have constant
// 2-D weights and constant biases (or none), the first no residual and an activation the op
// knows, the second no activation and X as its residual; the LayerNorm normalizes the last axis
// with float32 statistics and constant gamma (and beta) of K elements, and only its first output
// is read; every tensor has X's dtype; rows of K and of N elements are whole 16-byte multiples
// and wider than 8 (both products then run on cuBLASLt's aligned kernels with the residual in
// the epilogue, as FusedMatMul ran them: backends/cuda/gemm.cc; the op's kernel keeps that).
// Runs after fuse_classifier_head, which takes a classifier's last block with its head.
//
// Opt-in while its one-kernel CUDA path awaits its first GPU run (developer session 21 wrote it
// without device time left): INGOT_CUDA_FEED_FORWARD=1 when the engine is built turns the pass
// on; otherwise it rewrites nothing.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "ir/feed_forward_attrs.h"
#include "passes/match.h"
#include "passes/pass.h"
#include "passes/product_chain_match.h"

namespace ingot {
namespace {

constexpr int64_t kMinWidth = 9;  // wider than gemm_impl.h's kSkinnyMaxN: products on cuBLASLt

class FeedForwardMatcher : public ProductChainMatcher {
 public:
  using ProductChainMatcher::ProductChainMatcher;

  // The fused node for the LayerNorm `ln`, or nullopt when the pattern does not hold.
  std::optional<Node> match(int ln) {
    const Node& norm = ed_.node(ln);
    if (!layer_norm(norm)) return std::nullopt;
    const ValueId z = norm.inputs[0];
    if (!intermediate(z, ln)) return std::nullopt;
    const int p2 = ed_.producer(z);
    if (p2 < 0 || !ed_.alive(p2)) return std::nullopt;
    const Node& second = ed_.node(p2);
    if (!is_op(second, "FusedMatMul", "ingot") || second.inputs.size() != 4 || second.inputs[3] == kNoValue ||
        second.outputs.size() != 1 || !second.attrs.get_string("activation", "").empty() ||
        second.attrs.get_int("output_dtype", 0) != 0)
      return std::nullopt;
    const ValueId g = second.inputs[0], x = second.inputs[3];
    if (!intermediate(g, p2)) return std::nullopt;
    const int p1 = ed_.producer(g);
    if (p1 < 0 || !ed_.alive(p1)) return std::nullopt;
    const Node& first = ed_.node(p1);
    if (!product(first, /*first=*/true) || first.inputs[0] != x) return std::nullopt;
    const Tensor* w1 = ed_.constant(first.inputs[1]);
    const Tensor* w2 = ed_.constant(second.inputs[1]);
    const Tensor* gamma = ed_.constant(norm.inputs[1]);
    if (!w2 || w2->rank() != 2) return std::nullopt;
    const int64_t K = w1->dim(0), N = w1->dim(1);
    const DType t = dtype_of(x);
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return std::nullopt;
    const int64_t es = int64_t(dtype_size(t));
    if (w2->dim(0) != N || w2->dim(1) != K || K < kMinWidth || N < kMinWidth || (K * es) % 16 != 0 ||
        (N * es) % 16 != 0 || gamma->rank() != 1 || gamma->numel() != K)
      return std::nullopt;
    if (!absent(norm, 2) && !same_shape(norm.inputs[2], *gamma)) return std::nullopt;
    if (!absent(first, 2) && !vector_of(first.inputs[2], N)) return std::nullopt;
    if (!absent(second, 2) && !vector_of(second.inputs[2], K)) return std::nullopt;
    auto input = [](const Node& n, size_t i) { return absent(n, i) ? kNoValue : n.inputs[i]; };
    for (ValueId v : {first.inputs[1], input(first, 2), second.inputs[1], input(second, 2), norm.inputs[1],
                      input(norm, 2), g, z})
      if (v != kNoValue && dtype_of(v) != t) return std::nullopt;

    Node fused;
    fused.name = norm.name.empty() ? "feed_forward" : norm.name + "/feed_forward";
    fused.op_type = "FeedForward";
    fused.domain = "ingot";
    fused.inputs = {x, first.inputs[1], input(first, 2), second.inputs[1], input(second, 2), norm.inputs[1],
                    input(norm, 2)};
    fused.outputs = {norm.outputs[0]};
    fused.attrs.set_string("activation", first.attrs.get_string("activation", ""));
    fused.attrs.set_float("epsilon", norm.attrs.get_float("epsilon", 1e-5f));
    removed_ = {ln, p2, p1};
    return fused;
  }

  const std::vector<int>& removed() const { return removed_; }

 private:
  std::vector<int> removed_;
};

class FuseFeedForward : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const char* on = std::getenv("INGOT_CUDA_FEED_FORWARD");
    if (ctx.device() != "cuda" || !on || std::strcmp(on, "1") != 0) return 0;
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    int n = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "LayerNormalization")) continue;
      FeedForwardMatcher m(ed, metas);
      std::optional<Node> fused = m.match(i);
      if (!fused) continue;
      ctx.note("two FusedMatMuls and a LayerNormalization fused into FeedForward '" + fused->name + "'");
      for (int r : m.removed()) ed.remove_node(r);
      ed.add_node(std::move(*fused));
      ++n;
    }
    ed.commit();
    return n;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_feed_forward", FuseFeedForward);

}  // namespace ingot
