// fuse_embed_layer_norm: word + position (+ type) lookups, their sum and the LayerNorm become one
// ingot.EmbedLayerNorm that computes what the unfused graph computed.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ingot::testing
