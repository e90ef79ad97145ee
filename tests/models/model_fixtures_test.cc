// Every committed model fixture (tests/models/NAME/model.{torchscript,dynamo}.onnx, exported from
// PyTorch by scripts/export_fixtures.py) runs on CPU within 1e-4 max abs error of PyTorch's
// outputs for the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/npy.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace ingot;

namespace {

struct Fixture {
  std::string model;     // e.g. "bert"
  std::string exporter;  // "torchscript" or "dynamo"
};

std::vector<Fixture> fixtures() {
  std::vector<Fixture> out;
  fs::path root = fs::path(INGOT_SOURCE_DIR) / "tests" / "models";
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    for (const char* ex : {"torchscript", "dynamo"})
      if (fs::exists(d.path() / (std::string("model.") + ex + ".onnx"))) out.push_back({d.path().filename(), ex});
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) {
    return a.model + a.exporter < b.model + b.exporter;
  });
  return out;
}

class ModelFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(ModelFixture, MatchesPyTorchOnCpu) {
  const Fixture& f = GetParam();
  fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model;
  auto engine = Engine::from_onnx((dir / ("model." + f.exporter + ".onnx")).string());
  ASSERT_TRUE(engine.has_value()) << engine.status().message();
  auto inputs = read_npz((dir / "inputs.npz").string());
  ASSERT_TRUE(inputs.has_value()) << inputs.status().message();
  auto reference = read_npz((dir / "reference.npz").string());
  ASSERT_TRUE(reference.has_value()) << reference.status().message();

  auto outs = (*engine)->create_context()->run(*inputs);
  ASSERT_TRUE(outs.has_value()) << outs.status().message();
  for (const auto& out : *outs) {
    auto it = reference->find(out.name);
    ASSERT_NE(it, reference->end()) << "no reference for output " << out.name;
    const Tensor& want = it->second;
    ASSERT_EQ(out.tensor.shape(), want.shape()) << out.name;
    double max_err = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      max_err = std::max(max_err, std::fabs(out.tensor.scalar_as_double(i) - want.scalar_as_double(i)));
    EXPECT_LE(max_err, 1e-4) << f.model << "/" << f.exporter << " output " << out.name;
  }
}

// The same with an optimization profile pinned to the fixture's shapes: the static memory plan
// places every intermediate in one arena.
TEST_P(ModelFixture, MatchesPyTorchWithStaticMemoryPlan) {
  const Fixture& f = GetParam();
  fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model;
  auto inputs = read_npz((dir / "inputs.npz").string());
  ASSERT_TRUE(inputs.has_value()) << inputs.status().message();
  auto reference = read_npz((dir / "reference.npz").string());
  ASSERT_TRUE(reference.has_value()) << reference.status().message();
  EngineOptions eo;
  Profile p;
  for (const auto& [name, t] : *inputs) p.min[name] = p.opt[name] = p.max[name] = t.shape();
  eo.profiles.push_back(p);
  auto engine = Engine::load((dir / ("model." + f.exporter + ".onnx")).string(), eo);
  ASSERT_TRUE(engine.has_value()) << engine.status().message();
  ASSERT_NE((*engine)->memory_plan(), nullptr);
  EXPECT_GT((*engine)->memory_plan()->arena_bytes, 0);
  auto outs = (*engine)->create_context()->run(*inputs);
  ASSERT_TRUE(outs.has_value()) << outs.status().message();
  const Tensor& got = (*outs)[0].tensor;
  const Tensor& want = reference->at("logits");
  ASSERT_EQ(got.shape(), want.shape());
  double max_err = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    max_err = std::max(max_err, std::fabs(got.scalar_as_double(i) - want.scalar_as_double(i)));
  EXPECT_LE(max_err, 1e-4) << f.model << "/" << f.exporter;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelFixture, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                           return info.param.model + "_" + info.param.exporter;
                         });

}  // namespace
