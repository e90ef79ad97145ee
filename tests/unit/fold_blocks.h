// The transformer blocks fold_residual_test.cc and fold_layer_norm_test.cc rewrite (a
// feed-forward block and an attention block, each ending in residual add + LayerNorm), what they
// count in a rewritten graph, and the first optimizer stage run for a device.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot::testing::fold {

constexpr int64_t B = 2, S = 5, E = 8, F = 16;
constexpr int64_t kHeads = 2;

struct Counts {
  int skip_ln = 0, layer_norm = 0, residual_products = 0, norm_products = 0;
};

// SkipLayerNorm and LayerNormalization nodes, and products (FusedMatMul, Attention) with a
// residual input (3, 6) and with a LayerNorm's gamma (4, 7).
inline Counts count(const Model& m) {
  Counts c;
  for (const Node& n : m.graph.nodes) {
    c.skip_ln += n.op_type == "SkipLayerNorm";
    c.layer_norm += n.op_type == "LayerNormalization";
    const size_t slot = n.op_type == "FusedMatMul" ? 3 : n.op_type == "Attention" ? 6 : 0;
    c.residual_products += slot && n.inputs.size() > slot && n.inputs[slot] != kNoValue;
    c.norm_products += slot && n.inputs.size() > slot + 1 && n.inputs[slot + 1] != kNoValue;
  }
  return c;
}

// The product (FusedMatMul or Attention) that carries the LayerNorm inputs, or null.
inline const Node* norm_product(const Model& m) {
  for (const Node& n : m.graph.nodes) {
    const size_t gamma = n.op_type == "FusedMatMul" ? 4 : n.op_type == "Attention" ? 7 : 0;
    if (gamma && n.inputs.size() > gamma && n.inputs[gamma] != kNoValue) return &n;
  }
  return nullptr;
}

// m through the first optimizer stage for `device` (the optimizer alone: no GPU needed) with
// the passes `disabled` off, and the rewrites `pass` reported (0 when disabled).
inline std::pair<Model, int> optimized_for(Model m, const std::string& device, std::vector<ShapeBinding> bindings = {},
                                           const std::string& pass = "fold_residual_into_product",
                                           std::set<std::string> disabled = {}) {
  OptimizeOptions o;
  o.device = device;
  o.bindings = std::move(bindings);
  o.disabled = std::move(disabled);
  auto reports = optimize(m, o);
  EXPECT_TRUE(reports.has_value()) << reports.status().message();
  return {std::move(m), reports ? rewrites_of(*reports, pass) : -1};
}

// The LayerNorm of a block: gamma's shape, whether it has beta, its epsilon.
struct Norm {
  Shape gamma_shape{E};
  bool beta = true;
  float epsilon = 1e-5f;
};

// Y = LayerNorm(sum) as the exporters write it: a LayerNormalization over the last axis.
inline ValueId layer_norm(GraphBuilder& b, ValueId sum, const Norm& norm) {
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ln.set("epsilon", float_attr(norm.epsilon));
  std::vector<ValueId> ins{sum, b.constant("gamma", random_tensor(norm.gamma_shape, 5))};
  if (norm.beta) ins.push_back(b.constant("beta", random_tensor({E}, 6)));
  return b.node("LayerNormalization", ins, ln);
}

// A feed-forward block with a residual: h = LayerNorm(act(X·W1 + b1)·W2 + b2 (+) X), the residual
// Add's operands in either order; optionally the sum is a second output (a pre-LN block carries
// it on) and the second product has a Relu.
inline Model ffn_block(bool product_first, bool sum_output, bool relu_on_second, Shape residual_shape = {B, S, E},
                       const Norm& norm = {}) {
  GraphBuilder b("test:fold_residual");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId r = residual_shape == Shape{B, S, E} ? x : b.input("R", DType::kFloat32, residual_shape);
  ValueId h1 = b.node("Relu", {b.node("Add", {b.node("MatMul", {x, b.constant("W1", random_tensor({E, F}, 1))}),
                                              b.constant("b1", random_tensor({F}, 2))})});
  ValueId h2 = b.node("Add", {b.node("MatMul", {h1, b.constant("W2", random_tensor({F, E}, 3))}),
                              b.constant("b2", random_tensor({E}, 4))});
  if (relu_on_second) h2 = b.node("Relu", {h2});
  ValueId sum = b.node("Add", product_first ? std::vector<ValueId>{h2, r} : std::vector<ValueId>{r, h2});
  b.output(layer_norm(b, sum, norm));
  if (sum_output) b.output(sum);
  return b.m;
}

// An attention block: Y = LayerNorm(Attention(X, ..., W_out [E, E], b_out) + R), R = X, or with
// query_rows an input of the query rows' shape.
inline Model attention_block(const std::vector<int64_t>& query_rows) {
  GraphBuilder b("test:fold_residual_attention");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId r = query_rows.empty() ? x : b.input("R", DType::kFloat32, {B, int64_t(query_rows.size()), E});
  Attributes a;
  a.set("num_heads", int_attr(kHeads));
  a.set("scale", float_attr(0.3f));
  if (!query_rows.empty()) a.set("query_rows", ints_attr(query_rows));
  ValueId y = b.node("Attention",
                     {x, b.constant("Wqkv", random_tensor({E, 3 * E}, 1)), b.constant("bqkv", random_tensor({3 * E}, 2)),
                      kNoValue, b.constant("Wout", random_tensor({E, E}, 3)), b.constant("bout", random_tensor({E}, 4))},
                     a, "ingot");
  b.output(layer_norm(b, b.node("Add", {y, r}), Norm{}));
  return b.m;
}

// f (float32) in dtype t: float32 as it is, or rounded to float16.
inline Tensor in_dtype(DType t, const Tensor& f) {
  if (t == DType::kFloat32) return f;
  Tensor h(t, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) h.data<float16>()[i] = float16(f.data<float>()[i]);
  return h;
}

}  // namespace ingot::testing::fold
