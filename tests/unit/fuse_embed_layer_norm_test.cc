// fuse_embed_layer_norm: word + position (+ type) lookups, their sum and the LayerNorm become one
// ingot.EmbedLayerNorm that computes what the unfused graph computed, also when the position
// rows were already folded into a constant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../ops/embedding_model.h"

namespace ingot::testing {
namespace {

int count_op(const Engine& e, const std::string& op) {
  int n = 0;
  for (const Node& node : e.model().graph.nodes) n += node.op_type == op;
  return n;
}

TEST(FuseEmbedLayerNorm, FusesAndMatchesTheUnfusedGraph) {
  for (bool with_type : {false, true}) {
    Model m = embedding_model(50, 40, with_type);
    auto feeds = embedding_feeds(3, 9, 50);
    if (!with_type) feeds.erase("type_ids");
    auto fused = Engine::from_model(m);
    ASSERT_TRUE(fused.has_value()) << fused.status().message();
    EXPECT_EQ(count_op(**fused, "EmbedLayerNorm"), 1);
    EXPECT_EQ(count_op(**fused, "Gather"), 0);
    EngineOptions off;
    off.disabled_passes = {"fuse_embed_layer_norm"};
    auto plain = Engine::from_model(m, off);
    ASSERT_TRUE(plain.has_value());
    EXPECT_EQ(count_op(**plain, "EmbedLayerNorm"), 0);
    auto a = (*fused)->create_context()->run(feeds);
    auto b = (*plain)->create_context()->run(feeds);
    ASSERT_TRUE(a.has_value()) << a.status().message();
    ASSERT_TRUE(b.has_value());
    EXPECT_LE(max_abs_diff((*a)[0].tensor, (*b)[0].tensor), 2e-5) << (with_type ? "word+type+pos" : "word+pos");
  }
}

TEST(FuseEmbedLayerNorm, IdOutsideTheTableIsAnError) {
  Model m = embedding_model(50, 16, true);
  auto feeds = embedding_feeds(1, 4, 50);
  feeds["ids"].data<int64_t>()[2] = 50;
  auto e = Engine::from_model(m);
  ASSERT_TRUE(e.has_value());
  auto r = (*e)->create_context()->run(feeds);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("outside the table's 50 rows"), std::string::npos) << r.status().message();
}

TEST(FuseEmbedLayerNorm, SharedLookupStaysUnfused) {
  // The word rows are also a graph output: the lookup cannot disappear.
  Model m = embedding_model(50, 16, false);
  m.graph.outputs.push_back(m.graph.find("word_rows"));
  auto e = Engine::from_model(m);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(count_op(**e, "EmbedLayerNorm"), 0);
}

TEST(FuseEmbedLayerNorm, ShapeOfTheWordLookupIsKept) {
  // TorchScript's DistilBERT and GPT-2 read the sequence length off the word rows: the lookup
  // still fuses, and the Shape (here a graph output) keeps its value, [B, S, H].
  Model m = embedding_model(50, 16, false);
  ValueId shape = m.graph.intern("word_shape");
  Node n;
  n.op_type = "Shape";
  n.name = "word_shape";
  n.inputs = {m.graph.find("word_rows")};
  n.outputs = {shape};
  m.graph.nodes.insert(m.graph.nodes.begin() + 1, n);
  m.graph.outputs.push_back(shape);
  auto e = Engine::from_model(m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  EXPECT_EQ(count_op(**e, "EmbedLayerNorm"), 1);
  EXPECT_EQ(count_op(**e, "Gather"), 0);
  auto feeds = embedding_feeds(3, 7, 50);
  feeds.erase("type_ids");
  auto r = (*e)->create_context()->run(feeds);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  const Tensor& got = (*r)[1].tensor;
  ASSERT_EQ(got.numel(), 3);
  EXPECT_EQ(got.data<int64_t>()[0], 3);
  EXPECT_EQ(got.data<int64_t>()[1], 7);
  EXPECT_EQ(got.data<int64_t>()[2], 16);
}

TEST(FuseEmbedLayerNorm, CastToTheSameDtypeDoesNotBlockIt) {
  // TorchScript's GPT-2 casts its float32 position rows to float32 before the sum.
  Model m = embedding_model(50, 16, false);
  ValueId pos = m.graph.find("pos_rows");
  ValueId cast = m.graph.intern("pos_rows_f32");
  Node n;
  n.op_type = "Cast";
  n.name = "pos_cast";
  n.inputs = {pos};
  n.outputs = {cast};
  Attribute to;
  to.kind = Attribute::Kind::kInt;
  to.i = int64_t(DType::kFloat32);
  n.attrs.set("to", to);
  for (Node& node : m.graph.nodes)
    for (ValueId& v : node.inputs)
      if (v == pos) v = cast;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i)
    if (m.graph.nodes[i].outputs[0] == pos) {
      m.graph.nodes.insert(m.graph.nodes.begin() + long(i) + 1, n);
      break;
    }
  auto e = Engine::from_model(m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  EXPECT_EQ(count_op(**e, "EmbedLayerNorm"), 1);
  EXPECT_EQ(count_op(**e, "Cast"), 0);
}

// Position rows that fold_constants already evaluated (a fixed sequence length, few rows) are a
// constant term [1, S, H] or [S, H]: they fuse as a lookup of that constant at 0..S-1.
TEST(FuseEmbedLayerNorm, FoldedPositionRowsFuseAsAConstantTable) {
  constexpr int64_t S = 9, H = 16;
  for (bool rank3 : {true, false}) {
    for (bool with_type : {false, true}) {
      Model m = embedding_model(50, H, with_type);
      Graph& g = m.graph;
      // pos_rows = table rows 0..S-1 as an initializer; its Gather and the pos_ids input go.
      const Tensor& table = g.initializers.at(g.find("pos"));
      Tensor rows(DType::kFloat32, rank3 ? Shape{1, S, H} : Shape{S, H});
      std::copy_n(table.data<float>(), S * H, rows.data<float>());
      const ValueId pos_rows = g.find("pos_rows");
      g.initializers[pos_rows] = rows;
      std::erase_if(g.nodes, [&](const Node& n) { return !n.outputs.empty() && n.outputs[0] == pos_rows; });
      std::erase(g.inputs, g.find("pos_ids"));
      auto feeds = embedding_feeds(3, S, 50);
      feeds.erase("pos_ids");
      if (!with_type) feeds.erase("type_ids");
      const std::string what = std::string(rank3 ? "[1, S, H]" : "[S, H]") + (with_type ? " word+type" : " word");
      auto fused = Engine::from_model(m);
      ASSERT_TRUE(fused.has_value()) << what << ": " << fused.status().message();
      EXPECT_EQ(count_op(**fused, "EmbedLayerNorm"), 1) << what;
      EXPECT_EQ(count_op(**fused, "Gather"), 0) << what;
      EngineOptions off;
      off.disabled_passes = {"fuse_embed_layer_norm"};
      auto plain = Engine::from_model(m, off);
      ASSERT_TRUE(plain.has_value()) << what;
      auto a = (*fused)->create_context()->run(feeds);
      auto b = (*plain)->create_context()->run(feeds);
      ASSERT_TRUE(a.has_value()) << what << ": " << a.status().message();
      ASSERT_TRUE(b.has_value()) << what;
      EXPECT_EQ((*a)[0].tensor.shape(), (Shape{3, S, H})) << what;
      EXPECT_LE(max_abs_diff((*a)[0].tensor, (*b)[0].tensor), 2e-5) << what;
    }
  }
}

}  // namespace
}  // namespace ingot::testing
