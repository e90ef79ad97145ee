// Build-time tuning's host side (Engine::synthetic_inputs, Engine::tune_at_opt_shapes): the
// inputs it makes take the profile's opt shapes (else the declared ones), integer inputs are ones
// (valid indices and masks), floating-point ones a fixed draw in [-1, 1); no input shape to take
// means no tuning; a cpu engine tunes nothing. (The tuning itself: tests/gpu.)
#include <gtest/gtest.h>

#include <filesystem>

#include "../ops/graph_builder.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace ingot;

namespace {

std::string bert_fixture() {
  return (fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / "bert" / "model.dynamo.onnx").string();
}

TEST(EngineTuning, SyntheticInputsTakeTheOptShapesAndValidIndices) {
  EngineOptions eo;
  Profile p;
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids"}) {
    p.min[name] = {1, 8};
    p.opt[name] = {2, 16};
    p.max[name] = {4, 32};
  }
  eo.profiles.push_back(p);
  auto e = Engine::load(bert_fixture(), eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto inputs = (*e)->synthetic_inputs(p.opt);
  ASSERT_TRUE(inputs.has_value());
  ASSERT_EQ(inputs->size(), (*e)->inputs().size());
  for (const IoInfo& io : (*e)->inputs()) {
    const Tensor& t = inputs->at(io.name);
    EXPECT_EQ(t.dtype(), io.dtype) << io.name;
    EXPECT_EQ(t.shape(), (Shape{2, 16})) << io.name;
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.scalar_as_int(i), 1) << io.name << " element " << i;
  }
  // The engine runs on them (they are valid indices and a mask), and a cpu engine keeps no tuning.
  EXPECT_TRUE((*e)->create_context()->run(*inputs).has_value());
  EXPECT_TRUE((*e)->tune_at_opt_shapes().is_ok());
  EXPECT_TRUE((*e)->options().device_tuning.is_null());

  // Dynamic inputs and no shape given: nothing to tune at.
  EXPECT_FALSE((*e)->synthetic_inputs({}).has_value());
}

TEST(EngineTuning, SyntheticFloatInputsAreAFixedDrawOfTheDeclaredShape) {
  ingot::testing::GraphBuilder b("test:tuning_inputs");
  b.output(b.node("Relu", {b.input("X", DType::kFloat32, {3, 40})}));
  auto e = Engine::from_model(b.m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto one = (*e)->synthetic_inputs({}), two = (*e)->synthetic_inputs({});
  ASSERT_TRUE(one.has_value() && two.has_value());
  const Tensor& x = one->at("X");
  EXPECT_EQ(x.shape(), (Shape{3, 40}));
  double lo = 1, hi = -1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    ASSERT_TRUE(v >= -1.f && v < 1.f) << v;
    ASSERT_EQ(v, two->at("X").data<float>()[i]) << "element " << i << " differs between two calls";
    lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  }
  EXPECT_LT(lo, -0.5);  // a spread, not a constant
  EXPECT_GT(hi, 0.5);
}

}  // namespace
