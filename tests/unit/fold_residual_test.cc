// fold_residual_into_product: for CUDA engines a skip-LayerNorm's residual add moves into the
// FusedMatMul or Attention that computes its other operand, and with it the LayerNorm (the
// product's norm_gamma / norm_beta inputs) unless a view stands between them, the sum is read,
// the attention has query_rows or gamma is not [H], in which cases a LayerNormalization is left;
// CPU engines keep the SkipLayerNorm. The rewritten graph computes the same outputs (its residual
// and LayerNorm inputs run on the CPU kernels here, which match a separate LayerNormalization in
// float32 and float16 and reject malformed LayerNorm inputs with one line naming them), both
// operand orders and the pre-LN sum output are handled, an activation or a broadcast residual
// stops it, and the transformer fixtures of both exporters lose every SkipLayerNorm; a
// classifier's one-query attention reads its residual rows from the whole sequence
// (residual_rows "query") instead of through a Gather.
#include <gtest/gtest.h>

#include <cmath>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

constexpr int64_t B = 2, S = 5, E = 8, F = 16;

struct Counts {
  int skip_ln = 0, layer_norm = 0, residual_products = 0, norm_products = 0;
};

Counts count(const Model& m) {
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
const Node* norm_product(const Model& m) {
  for (const Node& n : m.graph.nodes) {
    const size_t gamma = n.op_type == "FusedMatMul" ? 4 : n.op_type == "Attention" ? 7 : 0;
    if (gamma && n.inputs.size() > gamma && n.inputs[gamma] != kNoValue) return &n;
  }
  return nullptr;
}

// m optimized for `device` (the optimizer alone: no GPU needed), and its rewrite count.
std::pair<Model, int> optimized_for(Model m, const std::string& device, std::vector<ShapeBinding> bindings = {}) {
  OptimizeOptions o;
  o.device = device;
  o.bindings = std::move(bindings);
  auto reports = optimize(m, o);
  EXPECT_TRUE(reports.has_value()) << reports.status().message();
  return {std::move(m), reports ? rewrites_of(*reports, "fold_residual_into_product") : -1};
}

// The LayerNorm of a block: gamma's shape, whether it has beta, its epsilon.
struct Norm {
  Shape gamma_shape{E};
  bool beta = true;
  float epsilon = 1e-5f;
};

// Y = LayerNorm(sum) as the exporters write it: a LayerNormalization over the last axis.
ValueId layer_norm(GraphBuilder& b, ValueId sum, const Norm& norm) {
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
Model ffn_block(bool product_first, bool sum_output, bool relu_on_second, Shape residual_shape = {B, S, E},
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

// The residual folds for CUDA, and the LayerNorm with it (`norm_folded`: no LayerNormalization
// left) or not (one left); CPU engines keep the SkipLayerNorm.
void expect_folded(const Model& original, const std::map<std::string, Tensor>& feeds, const std::string& what,
                   bool norm_folded) {
  auto [cuda, rewrites] = optimized_for(original, "cuda");
  EXPECT_EQ(rewrites, 1) << what;
  Counts c = count(cuda);
  EXPECT_EQ(c.skip_ln, 0) << what;
  EXPECT_EQ(c.layer_norm, norm_folded ? 0 : 1) << what;
  EXPECT_EQ(c.residual_products, 1) << what;
  EXPECT_EQ(c.norm_products, norm_folded ? 1 : 0) << what;
  EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 1e-5) << what;

  auto [cpu, cpu_rewrites] = optimized_for(original, "cpu");
  EXPECT_EQ(cpu_rewrites, 0) << what;
  EXPECT_EQ(count(cpu).skip_ln, 1) << what;
}

TEST(FoldResidualIntoProduct, FeedForwardBlockBothOperandOrdersAndTheSumOutput) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  expect_folded(ffn_block(true, false, false), feeds, "product + residual", true);
  expect_folded(ffn_block(false, false, false), feeds, "residual + product", true);
  // The product would write only the normalised rows: the sum stays its output, the LayerNorm a node.
  expect_folded(ffn_block(true, true, false), feeds, "sum read as a second output", false);
}

// The folded LayerNorm: the product takes gamma and beta (inputs 4 and 5, beta optional) and
// the SkipLayerNorm's epsilon, writes the SkipLayerNorm's output under its name, and no
// LayerNormalization is made.
TEST(FoldResidualIntoProduct, LayerNormFoldsIntoTheProductWithItsInputsAndEpsilon) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  for (bool beta : {true, false}) {
    const std::string what = beta ? "with beta" : "without beta";
    const Model original = ffn_block(true, false, false, {B, S, E}, Norm{{E}, beta, 1e-3f});
    auto [cuda, rewrites] = optimized_for(original, "cuda");
    EXPECT_EQ(rewrites, 1) << what;
    EXPECT_EQ(count(cuda).layer_norm + count(cuda).skip_ln, 0) << what;
    const Node* p = norm_product(cuda);
    ASSERT_NE(p, nullptr) << what;
    const Graph& g = cuda.graph;
    EXPECT_EQ(p->op_type, "FusedMatMul") << what;
    ASSERT_EQ(p->inputs.size(), beta ? 6u : 5u) << what;
    EXPECT_EQ(g.value(p->inputs[3]).name, "X") << what;
    EXPECT_EQ(g.value(p->inputs[4]).name, "gamma") << what;
    if (beta) EXPECT_EQ(g.value(p->inputs[5]).name, "beta") << what;
    EXPECT_FLOAT_EQ(p->attrs.get_float("norm_epsilon", 0.f), 1e-3f) << what;
    ASSERT_EQ(p->outputs.size(), 1u) << what;
    ASSERT_EQ(g.outputs.size(), 1u) << what;
    EXPECT_EQ(p->outputs[0], g.outputs[0]) << what;
    EXPECT_EQ(g.value(g.outputs[0]).name, original.graph.value(original.graph.outputs[0]).name) << what;
    EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 1e-5) << what;
  }
}

// An attention block: Y = LayerNorm(Attention(X, ..., W_out [E, E], b_out) + R), R = X, or with
// query_rows an input of the query rows' shape.
constexpr int64_t kHeads = 2;
Model attention_block(const std::vector<int64_t>& query_rows) {
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

// An Attention takes the LayerNorm as inputs 7 and 8; with query_rows (a classifier's last
// layer, whose LayerNorm fuse_classifier_head takes) only the residual folds.
TEST(FoldResidualIntoProduct, AttentionTakesTheLayerNormUnlessItHasQueryRows) {
  const Tensor x = random_tensor({B, S, E}, 7);
  const Model whole = attention_block({});
  expect_folded(whole, {{"X", x}}, "attention", true);
  auto [cuda, rewrites] = optimized_for(whole, "cuda");
  const Node* p = norm_product(cuda);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op_type, "Attention");
  ASSERT_EQ(p->inputs.size(), 9u);
  EXPECT_EQ(cuda.graph.value(p->inputs[7]).name, "gamma");
  EXPECT_EQ(cuda.graph.value(p->inputs[8]).name, "beta");
  EXPECT_FLOAT_EQ(p->attrs.get_float("norm_epsilon", 0.f), 1e-5f);
  expect_folded(attention_block({0, 2}), {{"X", x}, {"R", random_tensor({B, 2, E}, 8)}}, "attention with query_rows",
                false);
}

// The product behind a view (GPT-2's 2-D product reshaped back to [B, S, E]), or a gamma that is
// not [E] (here [1], broadcast): the residual folds, the LayerNorm stays a node.
TEST(FoldResidualIntoProduct, ViewOrBroadcastGammaKeepsTheLayerNormNode) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  GraphBuilder b("test:fold_residual_view");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  auto shape = [&](const std::string& name, std::vector<int64_t> dims) {
    Tensor t(DType::kInt64, {int64_t(dims.size())});
    for (size_t k = 0; k < dims.size(); ++k) t.data<int64_t>()[k] = dims[k];
    return b.constant(name, std::move(t));
  };
  ValueId rows = b.node("Reshape", {x, shape("rows_shape", {-1, E})});
  ValueId h = b.node("Add", {b.node("MatMul", {rows, b.constant("W", random_tensor({E, E}, 1))}),
                             b.constant("bias", random_tensor({E}, 2))});
  ValueId back = b.node("Reshape", {h, shape("back_shape", {B, S, E})});
  b.output(layer_norm(b, b.node("Add", {back, x}), Norm{}));
  expect_folded(b.m, feeds, "through a Reshape", false);
  expect_folded(ffn_block(true, false, false, {B, S, E}, Norm{{1}, true, 1e-5f}), feeds, "gamma [1]", false);
}

// f (float32) in dtype t: float32 as it is, or rounded to float16.
Tensor in_dtype(DType t, const Tensor& f) {
  if (t == DType::kFloat32) return f;
  Tensor h(t, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) h.data<float16>()[i] = float16(f.data<float>()[i]);
  return h;
}

struct NormCase {
  DType t = DType::kFloat32;
  bool residual = false, beta = false;
  std::string what() const {
    return dtype_name(t) + (residual ? " residual" : " no residual") + (beta ? " beta" : " no beta");
  }
};

// `op` (domain ingot) on `base` inputs, its residual slot last (kNoValue: none), and the
// LayerNorm of its output of `width` columns: as the node's inputs gamma and beta with
// norm_epsilon (`folded`), or as a LayerNormalization node after it.
Model with_norm(GraphBuilder& b, const std::string& op, std::vector<ValueId> base, Attributes attrs, int64_t width,
                const NormCase& c, bool folded) {
  const float eps = 1e-3f;
  ValueId gamma = b.constant("gamma", in_dtype(c.t, random_tensor({width}, 21, 0.5f, 1.5f)));
  ValueId beta = c.beta ? b.constant("beta", in_dtype(c.t, random_tensor({width}, 22))) : kNoValue;
  if (folded) {
    base.push_back(gamma);
    if (c.beta) base.push_back(beta);
    attrs.set("norm_epsilon", float_attr(eps));
    b.output(b.node(op, base, attrs, "ingot"));
    return b.m;
  }
  while (base.back() == kNoValue) base.pop_back();
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ln.set("epsilon", float_attr(eps));
  std::vector<ValueId> ins{b.node(op, base, attrs, "ingot"), gamma};
  if (c.beta) ins.push_back(beta);
  b.output(b.node("LayerNormalization", ins, ln));
  return b.m;
}

std::vector<NormCase> norm_cases() {
  std::vector<NormCase> cases;
  for (DType t : {DType::kFloat32, DType::kFloat16})
    for (bool residual : {false, true})
      for (bool beta : {false, true}) cases.push_back({t, residual, beta});
  return cases;
}

// float32: the same numbers as the separate LayerNormalization (same arithmetic). float16: the
// folded sum is not rounded to float16 before the LayerNorm, the separate one is (about 2^-11
// relative of values normalised to order 1, times gamma up to 1.5).
double norm_tolerance(DType t) { return t == DType::kFloat32 ? 1e-5 : 4e-3; }

// ingot.FusedMatMul with norm_gamma / norm_beta computes LayerNorm(A·W + bias (+ R)) as the
// product followed by a LayerNormalization node does.
TEST(FoldResidualIntoProduct, FusedMatMulLayerNormMatchesALayerNormalizationNode) {
  constexpr int64_t K = 16, N = 40;
  for (const NormCase& c : norm_cases()) {
    auto model = [&](bool folded) {
      GraphBuilder b("test:fused_matmul_norm");
      ValueId a = b.input("A", c.t, {3, 4, K});
      ValueId r = c.residual ? b.input("R", c.t, {3, 4, N}) : kNoValue;
      return with_norm(b, "FusedMatMul",
                       {a, b.constant("W", in_dtype(c.t, random_tensor({K, N}, 1))),
                        b.constant("bias", in_dtype(c.t, random_tensor({N}, 2))), r},
                       {}, N, c, folded);
    };
    std::map<std::string, Tensor> feeds{{"A", in_dtype(c.t, random_tensor({3, 4, K}, 3))}};
    if (c.residual) feeds["R"] = in_dtype(c.t, random_tensor({3, 4, N}, 4, -2.f, 2.f));
    auto folded = run_as_is(model(true), feeds), separate = run_as_is(model(false), feeds);
    ASSERT_EQ(folded.size(), 1u) << c.what();
    EXPECT_EQ(folded[0].tensor.dtype(), c.t) << c.what();
    EXPECT_LE(max_output_diff(folded, separate), norm_tolerance(c.t)) << c.what();
  }
}

// ingot.Attention with norm_gamma / norm_beta (inputs 7 and 8) normalises its output (after the
// projection and residual) as a LayerNormalization node after it does.
TEST(FoldResidualIntoProduct, AttentionLayerNormMatchesALayerNormalizationNode) {
  constexpr int64_t N = 8, M = 6;
  for (const NormCase& c : norm_cases()) {
    auto model = [&](bool folded) {
      GraphBuilder b("test:attention_norm");
      ValueId x = b.input("X", c.t, {B, S, E});
      ValueId r = c.residual ? b.input("R", c.t, {B, S, M}) : kNoValue;
      Attributes a;
      a.set("num_heads", int_attr(kHeads));
      a.set("scale", float_attr(0.3f));
      return with_norm(b, "Attention",
                       {x, b.constant("Wqkv", in_dtype(c.t, random_tensor({E, 3 * N}, 1))),
                        b.constant("bqkv", in_dtype(c.t, random_tensor({3 * N}, 2))), kNoValue,
                        b.constant("Wout", in_dtype(c.t, random_tensor({N, M}, 3))),
                        b.constant("bout", in_dtype(c.t, random_tensor({M}, 4))), r},
                       a, M, c, folded);
    };
    std::map<std::string, Tensor> feeds{{"X", in_dtype(c.t, random_tensor({B, S, E}, 5))}};
    if (c.residual) feeds["R"] = in_dtype(c.t, random_tensor({B, S, M}, 6, -2.f, 2.f));
    auto folded = run_as_is(model(true), feeds), separate = run_as_is(model(false), feeds);
    ASSERT_EQ(folded.size(), 1u) << c.what();
    EXPECT_EQ(folded[0].tensor.dtype(), c.t) << c.what();
    EXPECT_LE(max_output_diff(folded, separate), norm_tolerance(c.t)) << c.what();
  }
}

// m built as it is and run on feeds: "" when it ran, else the error line.
std::string run_message(const Model& m, const std::map<std::string, Tensor>& feeds) {
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(m, o);
  if (!e) return e.status().message();
  auto out = (*e)->create_context()->run(feeds);
  return out ? std::string() : out.status().message();
}

// Malformed LayerNorm inputs are one error naming the input or the attribute: gamma or beta of
// the wrong shape or dtype, beta without gamma, gamma with an activation or a float32 output
// (FusedMatMul), gamma without W_out (Attention).
TEST(FoldResidualIntoProduct, LayerNormInputErrorsNameTheInputOrAttribute) {
  constexpr int64_t K = 4, N = 6;
  auto fused = [&](Shape gamma_shape, DType gamma_dtype, Shape beta_shape, Attributes attrs, bool gamma = true) {
    GraphBuilder b("test:fused_matmul_norm_errors");
    ValueId a = b.input("A", DType::kFloat32, {3, K});
    std::vector<ValueId> ins{a, b.constant("W", random_tensor({K, N}, 1)), kNoValue, kNoValue,
                             gamma ? b.constant("gamma", in_dtype(gamma_dtype, random_tensor(gamma_shape, 2))) : kNoValue};
    if (!beta_shape.empty()) ins.push_back(b.constant("beta", random_tensor(beta_shape, 3)));
    b.output(b.node("FusedMatMul", ins, attrs, "ingot"));
    return run_message(b.m, {{"A", random_tensor({3, K}, 4)}});
  };
  auto expect_error = [](const std::string& got, const std::string& want) {
    EXPECT_NE(got.find(want), std::string::npos) << "got: '" << got << "', want: '" << want << "'";
  };
  EXPECT_EQ(fused({N}, DType::kFloat32, {N}, {}), "");
  expect_error(fused({N + 1}, DType::kFloat32, {}, {}), "input 4 (norm_gamma) has shape 7, expected [6]");
  expect_error(fused({N}, DType::kFloat16, {}, {}), "input 4 (norm_gamma) has dtype float16, A has float32");
  expect_error(fused({N}, DType::kFloat32, {1, N}, {}), "input 5 (norm_beta) has shape 1x6, expected [6]");
  expect_error(fused({N}, DType::kFloat32, {N}, {}, false), "input 5 (norm_beta) is given without input 4 (norm_gamma)");
  Attributes relu;
  relu.set("activation", string_attr("Relu"));
  expect_error(fused({N}, DType::kFloat32, {}, relu), "attribute 'activation' = 'Relu' with input 4 (norm_gamma)");
  Attributes wide;
  wide.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
  expect_error(fused({N}, DType::kFloat32, {}, wide), "attribute 'output_dtype' = 1 with input 4 (norm_gamma)");

  constexpr int64_t H = 2, AN = 8, M = 6;
  auto attention = [&](Shape gamma_shape, DType gamma_dtype, bool w_out) {
    GraphBuilder b("test:attention_norm_errors");
    ValueId x = b.input("X", DType::kFloat32, {B, S, E});
    Attributes a;
    a.set("num_heads", int_attr(H));
    b.output(b.node("Attention",
                    {x, b.constant("Wqkv", random_tensor({E, 3 * AN}, 1)), kNoValue, kNoValue,
                     w_out ? b.constant("Wout", random_tensor({AN, M}, 3)) : kNoValue, kNoValue, kNoValue,
                     b.constant("gamma", in_dtype(gamma_dtype, random_tensor(gamma_shape, 2)))},
                    a, "ingot"));
    return run_message(b.m, {{"X", random_tensor({B, S, E}, 5)}});
  };
  EXPECT_EQ(attention({M}, DType::kFloat32, true), "");
  expect_error(attention({M + 1}, DType::kFloat32, true), "input 7 (norm_gamma) has shape 7, expected [6]");
  expect_error(attention({M}, DType::kFloat16, true), "input 7 has dtype float16, X has float32");
  expect_error(attention({AN}, DType::kFloat32, false), "input 7 (norm_gamma) has shape 8 but W_out is absent");
}

TEST(FoldResidualIntoProduct, ActivationOrBroadcastResidualStaysSkipLayerNorm) {
  for (bool relu : {true, false}) {
    // A Relu after the second product, or a residual [S, E] that broadcasts over the batch.
    Model m = relu ? ffn_block(true, false, true) : ffn_block(true, false, false, {S, E});
    auto [cuda, rewrites] = optimized_for(std::move(m), "cuda");
    EXPECT_EQ(rewrites, 0) << (relu ? "relu" : "broadcast");
    EXPECT_EQ(count(cuda).skip_ln, 1) << (relu ? "relu" : "broadcast");
  }
}

TEST(FoldResidualIntoProduct, KernelsRejectAResidualWithAnActivation) {
  // The CPU kernel's contract: a residual only with activation "" (what the pass makes).
  GraphBuilder b("test:fold_residual");
  ValueId a = b.input("A", DType::kFloat32, {3, 4});
  Attributes attrs;
  attrs.set("activation", string_attr("Relu"));
  b.output(b.node("FusedMatMul", {a, b.constant("W", random_tensor({4, 4}, 1)), kNoValue, a}, attrs, "ingot"));
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(b.m, o);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("residual"), std::string::npos) << e.status().message();
}

// ingot.Attention's residual_rows "query" (what the pass sets when a one-query attention's
// residual is the Gather of its query rows): the residual is the whole sequence [B, S, M] and
// output row (b, i) adds its row (b, query_rows[i]), as an explicit Gather of those rows does.
TEST(FoldResidualIntoProduct, AttentionAddsTheQueryRowsOfAWholeSequenceResidual) {
  constexpr int64_t H = 2, N = 8, M = 6;
  const std::vector<int64_t> rows{3, -1, 0};
  auto model = [&](bool whole) {
    GraphBuilder b("test:residual_rows");
    ValueId x = b.input("X", DType::kFloat32, {B, S, E});
    ValueId r = b.input("R", DType::kFloat32, {B, S, M});
    Attributes a;
    a.set("num_heads", int_attr(H));
    a.set("scale", float_attr(0.3f));
    a.set("query_rows", ints_attr(rows));
    if (whole) a.set("residual_rows", string_attr("query"));
    ValueId residual = whole ? r : b.node("Gather", {r, b.constant("rows", [&] {
                                               Tensor t(DType::kInt64, {int64_t(rows.size())});
                                               for (size_t i = 0; i < rows.size(); ++i) t.data<int64_t>()[i] = rows[i];
                                               return t;
                                             }())},
                                          [] {
                                            Attributes g;
                                            g.set("axis", int_attr(1));
                                            return g;
                                          }());
    b.output(b.node("Attention",
                    {x, b.constant("Wqkv", random_tensor({E, 3 * N}, 1)), b.constant("bqkv", random_tensor({3 * N}, 2)),
                     kNoValue, b.constant("Wout", random_tensor({N, M}, 3)), b.constant("bout", random_tensor({M}, 4)),
                     residual},
                    a, "ingot"));
    return b.m;
  };
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 5)}, {"R", random_tensor({B, S, M}, 6)}};
  auto whole = run_as_is(model(true), feeds), gathered = run_as_is(model(false), feeds);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].tensor.shape(), (Shape{B, int64_t(rows.size()), M}));
  EXPECT_LE(max_output_diff(whole, gathered), 1e-6);
}

// residual_rows takes "output" or "query" only, and with "query" the residual must be the whole
// sequence [B, S, M]: each mistake is one error naming the attribute or the input.
TEST(FoldResidualIntoProduct, ResidualRowsErrorsNameTheAttributeOrTheInput) {
  constexpr int64_t H = 2, N = 8, M = 6;
  auto attempt = [&](const std::string& rows_kind, Shape residual_shape) {
    GraphBuilder b("test:residual_rows");
    ValueId x = b.input("X", DType::kFloat32, {B, S, E});
    ValueId r = b.input("R", DType::kFloat32, residual_shape);
    Attributes a;
    a.set("num_heads", int_attr(H));
    a.set("query_rows", ints_attr({0}));
    a.set("residual_rows", string_attr(rows_kind));
    b.output(b.node("Attention",
                    {x, b.constant("Wqkv", random_tensor({E, 3 * N}, 1)), kNoValue, kNoValue,
                     b.constant("Wout", random_tensor({N, M}, 3)), kNoValue, r},
                    a, "ingot"));
    EngineOptions o;
    o.optimize = false;
    auto e = Engine::from_model(b.m, o);
    if (!e) return e.status().message();
    auto out = (*e)->create_context()->run({{"X", random_tensor({B, S, E}, 5)}, {"R", random_tensor(residual_shape, 6)}});
    return out ? std::string() : out.status().message();
  };
  const std::string bad_kind = attempt("rows", {B, S, M});
  EXPECT_NE(bad_kind.find("attribute residual_rows 'rows' is not output or query"), std::string::npos) << bad_kind;
  const std::string bad_shape = attempt("query", {B, 1, M});
  EXPECT_NE(bad_shape.find("input 6 (residual) has shape 2x1x6, expected 2x5x6"), std::string::npos)
      << bad_shape;
}

// The transformer fixtures of both exporters: every residual add of every layer folds (post-LN
// BERT-style models: both per layer, the last layer's through the one-query Squeeze; GPT-2's
// pre-LN blocks: into the residual sums, through the Reshape after its 2-D products), and the
// rewritten graph still matches PyTorch's outputs when its products and LayerNorms run on the
// CPU.
TEST(FoldResidualIntoProduct, TransformerFixtures) {
  for (const char* model : {"bert", "distilbert", "roberta", "gpt2"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      const std::string what = std::string(model) + "/" + ex;
      auto f = load_fixture_files(model, ex);
      ASSERT_TRUE(f.has_value()) << what << ": " << f.status().message();
      auto [cuda, rewrites] = optimized_for(std::move(f->model), "cuda", {f->shapes});
      // Two layers of two residual adds each; what stays a SkipLayerNorm is the embeddings' sum.
      EXPECT_EQ(rewrites, 4) << what;
      EXPECT_EQ(count(cuda).residual_products, 4) << what;
      // The first layer's two LayerNorms fold into their products; a classifier's last layer keeps
      // its two as nodes (its one-query attention's, and the one the classifier head reads: both
      // are fuse_classifier_head's). GPT-2's pre-LN blocks read every sum or go through a view.
      EXPECT_EQ(count(cuda).norm_products, std::string(model) == "gpt2" ? 0 : 2) << what;
      // A classifier's last attention (one query row) reads its residual from the whole
      // sequence: no Gather of the residual is left.
      int whole_sequence = 0;
      for (const Node& n : cuda.graph.nodes) {
        if (n.op_type != "Attention" || n.inputs.size() < 7 || n.inputs[6] == kNoValue) continue;
        whole_sequence += n.attrs.get_string("residual_rows", "output") == "query";
        for (const Node& p : cuda.graph.nodes)
          if (!p.outputs.empty() && p.outputs[0] == n.inputs[6]) {
            EXPECT_NE(p.op_type, "Gather") << what;
          }
      }
      EXPECT_EQ(whole_sequence, std::string(model) == "gpt2" ? 0 : 1) << what;
      for (const Node& n : cuda.graph.nodes)
        if (n.op_type == "SkipLayerNorm")
          for (ValueId v : n.inputs)
            for (const Node& p : cuda.graph.nodes)
              if (!p.outputs.empty() && p.outputs[0] == v) {
                EXPECT_TRUE(p.op_type != "FusedMatMul" && p.op_type != "Attention") << what << ": " << p.name;
              }
      auto outs = run_as_is(cuda, f->inputs);
      for (const auto& o : outs)
        EXPECT_LE(max_abs_error(o.tensor, f->reference.at(o.name)), 1e-4) << what << " output " << o.name;
    }
  }
}

}  // namespace
}  // namespace ingot
