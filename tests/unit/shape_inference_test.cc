// ingot's own shape inference: once input shapes are bound, every value of a real exported
// transformer has a known dtype and shape, and its shape subgraphs fold to constants.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/engine.h"

using namespace ingot;

namespace {

std::string fixture(const std::string& rel) {
  return (std::filesystem::path(INGOT_SOURCE_DIR) / "tests" / "models" / rel).string();
}

TEST(ShapeInference, BindsEveryValueOfTorchScriptBert) {
  // Unoptimized: the shape subgraphs are still there to be folded by inference.
  EngineOptions plain;
  plain.optimize = false;
  auto e = Engine::from_onnx(fixture("bert/model.torchscript.onnx"), plain);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto metas = (*e)->infer_shapes({{"input_ids", {3, 7}}, {"attention_mask", {3, 7}}, {"token_type_ids", {3, 7}}});
  ASSERT_TRUE(metas.has_value()) << metas.status().message();
  const Graph& g = (*e)->model().graph;
  for (const Node& n : g.nodes)
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (ValueId v : *ids) {
        if (v == kNoValue) continue;
        const ValueMeta& m = (*metas)[size_t(v)];
        EXPECT_TRUE(m.known && !m.dynamic) << "value '" << g.value(v).name << "' has no static shape";
      }
  ValueId logits = g.outputs[0];
  EXPECT_EQ((*metas)[size_t(logits)].shape, (Shape{3, 2}));
  EXPECT_EQ((*metas)[size_t(logits)].dtype, DType::kFloat32);
  // The Shape -> Gather -> Unsqueeze -> Concat chains feeding Reshape fold to constants.
  int folded_shapes = 0;
  for (const Node& n : g.nodes)
    if (n.op_type == "Concat" && (*metas)[size_t(n.outputs[0])].value) ++folded_shapes;
  EXPECT_GT(folded_shapes, 0);
}

TEST(ShapeInference, ReportsTheNodeWhereShapesConflict) {
  auto e = Engine::from_onnx(fixture("bert/model.torchscript.onnx"));
  ASSERT_TRUE(e.has_value()) << e.status().message();
  // A sequence longer than the 128 position embeddings cannot be looked up.
  auto metas = (*e)->infer_shapes({{"input_ids", {1, 300}}, {"attention_mask", {1, 300}}, {"token_type_ids", {1, 300}}});
  ASSERT_FALSE(metas.has_value());
  EXPECT_NE(metas.status().message().find("node"), std::string::npos) << metas.status().message();
}

}  // namespace
