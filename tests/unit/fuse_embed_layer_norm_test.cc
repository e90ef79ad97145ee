// fuse_embed_layer_norm: word + position (+ type) lookups, their sum and the LayerNorm become one
// ingot.EmbedLayerNorm that computes what the unfused graph computed.
#include <gtest/gtest.h>

#include <cmath>

#include "../ops/op_test_util.h"

namespace ingot::testing {
namespace {

// ids [B, S] and type_ids [B, S] (int64), pos_ids [1, S]; Gather from three constant tables,
// Add(word, type) + pos, LayerNormalization over H.
Model embedding_model(int64_t vocab, int64_t h, bool with_type) {
  Model m;
  m.path = "test:embeddings";
  m.ir_version = 8;
  m.opsets[""] = 17;
  Graph& g = m.graph;
  auto input = [&](const char* name) {
    ValueId v = g.intern(name);
    g.value(v).dtype = DType::kInt64;
    // [batch, sequence]; position ids [1, sequence]
    g.value(v).shape = SymShape{std::string(name) == "pos_ids" ? Dim{1, ""} : Dim{-1, "batch"}, Dim{-1, "sequence"}};
    g.inputs.push_back(v);
    return v;
  };
  auto table = [&](const char* name, int64_t rows, uint32_t seed) {
    ValueId v = g.intern(name);
    g.initializers[v] = random_tensor({rows, h}, seed);
    g.value(v).dtype = DType::kFloat32;
    return v;
  };
  auto node = [&](const char* op, std::vector<ValueId> in, const char* out) {
    Node n;
    n.op_type = op;
    n.name = out;
    n.inputs = std::move(in);
    n.outputs = {g.intern(out)};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  ValueId ids = input("ids"), pos = input("pos_ids");
  ValueId word = node("Gather", {table("word", vocab, 1), ids}, "word_rows");
  ValueId x = word;
  if (with_type) {
    ValueId types = input("type_ids");
    x = node("Add", {word, node("Gather", {table("type", 2, 2), types}, "type_rows")}, "word_type");
  }
  ValueId s = node("Add", {x, node("Gather", {table("pos", 64, 3), pos}, "pos_rows")}, "sum");
  ValueId gamma = g.intern("gamma"), beta = g.intern("beta");
  g.initializers[gamma] = random_tensor({h}, 4, 0.5f, 1.5f);
  g.initializers[beta] = random_tensor({h}, 5);
  ValueId y = node("LayerNormalization", {s, gamma, beta}, "y");
  g.outputs.push_back(y);
  return m;
}

std::map<std::string, Tensor> embedding_feeds(int64_t b, int64_t s, int64_t vocab) {
  Tensor ids(DType::kInt64, {b, s}), types(DType::kInt64, {b, s}), pos(DType::kInt64, {1, s});
  for (int64_t i = 0; i < b * s; ++i) {
    ids.data<int64_t>()[i] = (i * 7919) % vocab - (i % 5 == 0 ? vocab : 0);  // some negative ids
    types.data<int64_t>()[i] = i % 2;
  }
  for (int64_t i = 0; i < s; ++i) pos.data<int64_t>()[i] = i;
  return {{"ids", ids}, {"type_ids", types}, {"pos_ids", pos}};
}

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

}  // namespace
}  // namespace ingot::testing
