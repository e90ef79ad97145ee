// fold_residual_into_product: for CUDA engines a skip-LayerNorm's residual add moves into the
// FusedMatMul or Attention that computes its other operand, leaving a LayerNormalization; CPU
// engines keep the SkipLayerNorm. The rewritten graph computes the same outputs (its residual
// inputs run on the CPU kernels here), both operand orders and the pre-LN sum output are
// handled, an activation or a broadcast residual stops it, and the transformer fixtures of both
// exporters lose every SkipLayerNorm; a classifier's one-query attention reads its residual rows
// from the whole sequence (residual_rows "query") instead of through a Gather.
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
  int skip_ln = 0, layer_norm = 0, residual_products = 0;
};

Counts count(const Model& m) {
  Counts c;
  for (const Node& n : m.graph.nodes) {
    c.skip_ln += n.op_type == "SkipLayerNorm";
    c.layer_norm += n.op_type == "LayerNormalization";
    const size_t slot = n.op_type == "FusedMatMul" ? 3 : n.op_type == "Attention" ? 6 : 0;
    c.residual_products += slot && n.inputs.size() > slot && n.inputs[slot] != kNoValue;
  }
  return c;
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

// A feed-forward block with a residual: h = LayerNorm(act(X·W1 + b1)·W2 + b2 (+) X), the residual
// Add's operands in either order; optionally the sum is a second output (a pre-LN block carries
// it on) and the second product has a Relu.
Model ffn_block(bool product_first, bool sum_output, bool relu_on_second, Shape residual_shape = {B, S, E}) {
  GraphBuilder b("test:fold_residual");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId r = residual_shape == Shape{B, S, E} ? x : b.input("R", DType::kFloat32, residual_shape);
  ValueId h1 = b.node("Relu", {b.node("Add", {b.node("MatMul", {x, b.constant("W1", random_tensor({E, F}, 1))}),
                                              b.constant("b1", random_tensor({F}, 2))})});
  ValueId h2 = b.node("Add", {b.node("MatMul", {h1, b.constant("W2", random_tensor({F, E}, 3))}),
                              b.constant("b2", random_tensor({E}, 4))});
  if (relu_on_second) h2 = b.node("Relu", {h2});
  ValueId sum = b.node("Add", product_first ? std::vector<ValueId>{h2, r} : std::vector<ValueId>{r, h2});
  Attributes ln;
  ln.set("axis", int_attr(-1));
  b.output(b.node("LayerNormalization", {sum, b.constant("gamma", random_tensor({E}, 5)),
                                         b.constant("beta", random_tensor({E}, 6))},
                  ln));
  if (sum_output) b.output(sum);
  return b.m;
}

void expect_folded(const Model& original, const std::map<std::string, Tensor>& feeds, const std::string& what) {
  auto [cuda, rewrites] = optimized_for(original, "cuda");
  EXPECT_EQ(rewrites, 1) << what;
  Counts c = count(cuda);
  EXPECT_EQ(c.skip_ln, 0) << what;
  EXPECT_EQ(c.layer_norm, 1) << what;
  EXPECT_EQ(c.residual_products, 1) << what;
  EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 1e-5) << what;

  auto [cpu, cpu_rewrites] = optimized_for(original, "cpu");
  EXPECT_EQ(cpu_rewrites, 0) << what;
  EXPECT_EQ(count(cpu).skip_ln, 1) << what;
}

TEST(FoldResidualIntoProduct, FeedForwardBlockBothOperandOrdersAndTheSumOutput) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  expect_folded(ffn_block(true, false, false), feeds, "product + residual");
  expect_folded(ffn_block(false, false, false), feeds, "residual + product");
  expect_folded(ffn_block(true, true, false), feeds, "sum read as a second output");
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
