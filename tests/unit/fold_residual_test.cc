// fold_residual_into_product: for CUDA engines a skip-LayerNorm's residual add moves into the
// FusedMatMul or Attention that computes its other operand, leaving a LayerNormalization; CPU
// engines keep the SkipLayerNorm. The rewritten graph computes the same outputs (its residual
// inputs run on the CPU kernels here), both operand orders and the pre-LN sum output are
// handled, an activation or a broadcast residual stops it, and the transformer fixtures of both
// exporters lose every SkipLayerNorm; a classifier's one-query attention reads its residual rows
// from the whole sequence (residual_rows "query") instead of through a Gather. With the whole
// pipeline, fold_layer_norm_into_product then takes the LayerNormalization into the product
// where it can (its own tests: fold_layer_norm_test.cc): the blocks' expectations are checked
// both ways.
#include <gtest/gtest.h>

#include <cmath>

#include "fold_blocks.h"

namespace ingot {
namespace {

using namespace ingot::testing;
using namespace ingot::testing::fold;

// The residual folds for CUDA and leaves one LayerNormalization (fold_layer_norm_into_product
// off); with the whole pipeline that LayerNorm goes into the product too (`norm_folded`) or stays
// a node. CPU engines keep the SkipLayerNorm.
void expect_folded(const Model& original, const std::map<std::string, Tensor>& feeds, const std::string& what,
                   bool norm_folded) {
  auto [alone, rewrites] = optimized_for(original, "cuda", {}, "fold_residual_into_product",
                                         {"fold_layer_norm_into_product"});
  EXPECT_EQ(rewrites, 1) << what;
  Counts c = count(alone);
  EXPECT_EQ(c.skip_ln, 0) << what;
  EXPECT_EQ(c.layer_norm, 1) << what;
  EXPECT_EQ(c.residual_products, 1) << what;
  EXPECT_EQ(c.norm_products, 0) << what;
  EXPECT_LE(max_output_diff(run_as_is(alone, feeds), run_as_is(original, feeds)), 1e-5) << what;

  auto [cuda, pipeline_rewrites] = optimized_for(original, "cuda");
  EXPECT_EQ(pipeline_rewrites, 1) << what;
  c = count(cuda);
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
  // The sum is the product's output and a graph output: the LayerNorm stays a node.
  expect_folded(ffn_block(true, true, false), feeds, "sum read as a second output", false);
}

// An attention block's residual folds into the Attention (input 6), with or without query_rows;
// in the pipeline its LayerNorm then follows unless the attention has query_rows (a classifier's
// last layer, whose LayerNorm fuse_classifier_head takes).
TEST(FoldResidualIntoProduct, AttentionBlockWithAndWithoutQueryRows) {
  const Tensor x = random_tensor({B, S, E}, 7);
  expect_folded(attention_block({}), {{"X", x}}, "attention", true);
  expect_folded(attention_block({0, 2}), {{"X", x}, {"R", random_tensor({B, 2, E}, 8)}}, "attention with query_rows",
                false);
}

// The product behind a view (GPT-2's 2-D product reshaped back to [B, S, E]), or a gamma that is
// not [E] (here [1], broadcast): the residual folds, and the LayerNorm stays a node in the
// pipeline too.
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
      auto [cuda, rewrites] = optimized_for(f->model, "cuda", {f->shapes});
      // Two layers of two residual adds each; what stays a SkipLayerNorm is the embeddings' sum.
      EXPECT_EQ(rewrites, 4) << what;
      EXPECT_EQ(count(cuda).residual_products, 4) << what;
      // In the pipeline the first layer's two LayerNorms then fold into their products
      // (fold_layer_norm_into_product); a classifier's last layer keeps its two as nodes (its
      // one-query attention's, and the one the classifier head reads: both are
      // fuse_classifier_head's). GPT-2's pre-LN blocks read every sum or go through a view.
      const int norms = std::string(model) == "gpt2" ? 0 : 2;
      EXPECT_EQ(count(cuda).norm_products, norms) << what;
      EXPECT_EQ(optimized_for(f->model, "cuda", {f->shapes}, "fold_layer_norm_into_product").second, norms) << what;
      // This pass alone leaves every one of them a LayerNormalization node.
      auto [alone, alone_rewrites] =
          optimized_for(f->model, "cuda", {f->shapes}, "fold_residual_into_product", {"fold_layer_norm_into_product"});
      EXPECT_EQ(alone_rewrites, 4) << what;
      EXPECT_EQ(count(alone).residual_products, 4) << what;
      EXPECT_EQ(count(alone).norm_products, 0) << what;
      EXPECT_EQ(count(alone).layer_norm, count(cuda).layer_norm + norms) << what;
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
