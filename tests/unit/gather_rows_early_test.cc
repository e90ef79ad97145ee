// gather_rows_early: a Gather of one position moves above the position-wise ops that produce its
// rows (fused linear ops, LayerNorm, residual adds, activations), which then run on the gathered
// rows only; outputs do not change; a value also read elsewhere stops the region (that reader
// still sees every row); a Gather over the last axis stays; an ingot.Attention that only the
// region reads computes the gathered queries alone (query_rows), one read elsewhere every row;
// the BERT-style classifier fixtures of both exporters compute their last layer's attention
// output and feed-forward block on the first token only.
#include <gtest/gtest.h>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

constexpr int64_t B = 3, S = 7, E = 8, F = 16;

Tensor int64_scalar(int64_t v) {
  Tensor t(DType::kInt64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

// h = LayerNorm(Relu(X·W1 + b1)·W2 + b2 + X); Y = Gather(h, `index`, `axis`) (optionally the
// Relu's output is a second graph output).
Model block(int64_t axis, int64_t index, bool expose_hidden) {
  GraphBuilder b("test:gather_rows_early");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId h1 = b.node("Relu", {b.node("Add", {b.node("MatMul", {x, b.constant("W1", random_tensor({E, F}, 1))}, "xw1"),
                                              b.constant("b1", random_tensor({F}, 2))},
                                       "h1_pre")},
                      "h1");
  ValueId h2 = b.node("Add", {b.node("MatMul", {h1, b.constant("W2", random_tensor({F, E}, 3))}, "h1w2"),
                              b.constant("b2", random_tensor({E}, 4))},
                      "h2");
  ValueId res = b.node("Add", {h2, x}, "res");
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ValueId h = b.node("LayerNormalization", {res, b.constant("gamma", random_tensor({E}, 5)), b.constant("beta", random_tensor({E}, 6))},
                     "h", ln);
  Attributes ga;
  ga.set("axis", int_attr(axis));
  b.output(b.node("Gather", {h, b.constant("index", int64_scalar(index))}, "Y", ga));
  if (expose_hidden) b.output(h1);
  return b.m;
}

struct Result {
  std::vector<NamedTensor> outputs;
  int rewrites = 0;
  int full_rank_matmuls = 0;  // products still computed over all B·S rows
};

Result run(const Model& m, bool enabled) {
  EngineOptions o;
  if (!enabled) o.disabled_passes = {"gather_rows_early"};
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  Result r;
  r.rewrites = rewrites_of((*e)->pass_reports(), "gather_rows_early");
  auto metas = infer_with((*e)->model(), {{"X", {B, S, E}}});
  EXPECT_TRUE(metas.has_value());
  for (const Node& n : (*e)->model().graph.nodes)
    if (metas && (n.op_type == "FusedMatMul" || n.op_type == "MatMul"))
      r.full_rank_matmuls += (*metas)[size_t(n.inputs[0])].shape.size() == 3;
  auto out = (*e)->create_context()->run({{"X", random_tensor({B, S, E}, 7)}});
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (out) r.outputs = *out;
  return r;
}

void expect_same_outputs(const Result& a, const Result& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
    EXPECT_EQ(a.outputs[i].tensor.shape(), b.outputs[i].tensor.shape());
    EXPECT_LT(max_abs_diff(a.outputs[i].tensor, b.outputs[i].tensor), 1e-5) << a.outputs[i].name;
  }
}

TEST(GatherRowsEarly, ProductsRunOnTheGatheredRows) {
  for (int64_t index : {int64_t(0), S - 1, int64_t(-1)}) {
    SCOPED_TRACE(index);
    const Model m = block(1, index, false);
    const Result off = run(m, false), on = run(m, true);
    EXPECT_EQ(off.full_rank_matmuls, 2);
    EXPECT_EQ(on.rewrites, 1);
    EXPECT_EQ(on.full_rank_matmuls, 0);
    expect_same_outputs(on, off);
  }
}

TEST(GatherRowsEarly, ValuesReadElsewhereKeepEveryRow) {
  // h1 is a graph output: the first product must produce every row; the second moves.
  const Model m = block(1, 2, true);
  const Result off = run(m, false), on = run(m, true);
  EXPECT_EQ(on.rewrites, 1);
  EXPECT_EQ(on.full_rank_matmuls, 1);
  expect_same_outputs(on, off);
}

TEST(GatherRowsEarly, LastAxisGatherStays) {
  const Model m = block(2, 1, false);
  const Result off = run(m, false), on = run(m, true);
  EXPECT_EQ(on.rewrites, 0);
  EXPECT_EQ(on.full_rank_matmuls, 2);
  expect_same_outputs(on, off);
}

// A post-LN layer: a = Attention(X) (ingot, with out-projection and a
// padding mask), h = LayerNorm(a·W + X); Y = Gather(h, index, axis 1) (optionally `a` is a second
// graph output).
Model attention_block(const Tensor& index, bool expose_attention) {
  GraphBuilder b("test:gather_rows_early_attention");
  constexpr int64_t H = 2;
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId mask = b.input("mask", DType::kFloat32, {B, 1, 1, S});
  Attributes at;
  at.set("num_heads", int_attr(H));
  at.set("scale", float_attr(0.5f));
  at.set("mask_kind", string_attr("add"));
  ValueId a = b.node("Attention",
                     {x, b.constant("Wqkv", random_tensor({E, 3 * E}, 11)), b.constant("bqkv", random_tensor({3 * E}, 12)),
                      mask, b.constant("Wout", random_tensor({E, E}, 13)), b.constant("bout", random_tensor({E}, 14))},
                     at, "ingot");
  ValueId res = b.node("Add", {b.node("MatMul", {a, b.constant("W", random_tensor({E, E}, 15))}, "aw"), x}, "res");
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ValueId h = b.node("LayerNormalization", {res, b.constant("gamma", random_tensor({E}, 5)), b.constant("beta", random_tensor({E}, 6))},
                     "h", ln);
  Attributes ga;
  ga.set("axis", int_attr(1));
  b.output(b.node("Gather", {h, b.constant("index", index)}, "Y", ga));
  if (expose_attention) b.output(a);
  return b.m;
}

struct AttentionResult {
  std::vector<NamedTensor> outputs;
  std::vector<int64_t> query_rows;  // of the graph's Attention
  int attentions = 0;
};

AttentionResult run_attention(const Model& m, bool enabled) {
  EngineOptions o;
  if (!enabled) o.disabled_passes = {"gather_rows_early"};
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  AttentionResult r;
  for (const Node& n : (*e)->model().graph.nodes)
    if (n.op_type == "Attention") ++r.attentions, r.query_rows = n.attrs.get_ints("query_rows");
  Tensor mask(DType::kFloat32, {B, 1, 1, S});
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = i % S >= S - (i / S) ? -INFINITY : 0.f;
  auto out = (*e)->create_context()->run({{"X", random_tensor({B, S, E}, 7)}, {"mask", mask}});
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (out) r.outputs = *out;
  return r;
}

TEST(GatherRowsEarly, AttentionComputesTheGatheredQueries) {
  Tensor rows(DType::kInt64, {2});
  rows.data<int64_t>()[0] = S - 1, rows.data<int64_t>()[1] = 1;
  for (const Tensor& index : {int64_scalar(0), int64_scalar(-2), rows}) {
    SCOPED_TRACE(index.rank() ? "[S-1, 1]" : std::to_string(index.data<int64_t>()[0]));
    const Model m = attention_block(index, false);
    const AttentionResult off = run_attention(m, false), on = run_attention(m, true);
    EXPECT_EQ(on.attentions, 1);
    std::vector<int64_t> want(index.data<int64_t>(), index.data<int64_t>() + index.numel());
    EXPECT_EQ(on.query_rows, want);
    EXPECT_TRUE(off.query_rows.empty());
    ASSERT_EQ(on.outputs.size(), 1u);
    for (size_t i = 0; i < on.outputs.size(); ++i) {
      EXPECT_EQ(on.outputs[i].tensor.shape(), off.outputs[i].tensor.shape());
      EXPECT_LT(max_abs_diff(on.outputs[i].tensor, off.outputs[i].tensor), 1e-5);
    }
  }
}

TEST(GatherRowsEarly, AttentionReadElsewhereKeepsEveryQuery) {
  const Model m = attention_block(int64_scalar(0), true);
  const AttentionResult off = run_attention(m, false), on = run_attention(m, true);
  EXPECT_TRUE(on.query_rows.empty());
  ASSERT_EQ(on.outputs.size(), 2u);
  for (size_t i = 0; i < on.outputs.size(); ++i)
    EXPECT_LT(max_abs_diff(on.outputs[i].tensor, off.outputs[i].tensor), 1e-5) << on.outputs[i].name;
}

// BERT's pooler and DistilBERT's classifier read the first token of the last layer: its
// feed-forward products run on [B, hidden] rows (outputs against PyTorch: ModelFixture).
TEST(GatherRowsEarly, ClassifierFixturesComputeOneTokenOfTheLastLayer) {
  for (const char* model : {"bert", "distilbert"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      SCOPED_TRACE(std::string(model) + "/" + ex);
      auto f = optimized_fixture(model, ex);
      ASSERT_TRUE(f.has_value()) << f.status().message();
      EXPECT_EQ(rewrites_of(f->engine->pass_reports(), "gather_rows_early"), 1);
      int token_products = 0;  // FusedMatMuls over [B, hidden]
      for (const Node& n : f->engine->model().graph.nodes)
        if (n.op_type == "FusedMatMul") token_products += f->metas[size_t(n.inputs[0])].shape.size() == 2;
      // The last layer's two feed-forward products and the head's two (pooler or pre-classifier,
      // classifier); without the pass only the head's.
      EXPECT_EQ(token_products, 4);
      // The last layer's attention computes the first token's row alone: [B, 1, hidden].
      int one_query = 0, every_query = 0;
      for (const Node& n : f->engine->model().graph.nodes) {
        if (n.op_type != "Attention") continue;
        const Shape& out = f->metas[size_t(n.outputs[0])].shape;
        if (n.attrs.get_ints("query_rows") == std::vector<int64_t>{0} && out.size() == 3 && out[1] == 1) ++one_query;
        else if (!n.attrs.has("query_rows")) ++every_query;
      }
      EXPECT_EQ(one_query, 1);
      EXPECT_EQ(every_query, 1);
    }
  }
}

}  // namespace
}  // namespace ingot
