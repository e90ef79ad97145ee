// What optimizer-pass tests ask of an optimized model: how often a pass rewrote it, and the
// shapes of its values at a test fixture's recorded inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/npy.h"
#include "onnx_import/import.h"
#include "passes/pass.h"
#include "runtime/engine.h"

namespace ingot::testing {

// The rewrites `pass` reported, -1 when it did not report.
inline int rewrites_of(const std::vector<PassReport>& reports, const std::string& pass) {
  for (const PassReport& r : reports)
    if (r.name == pass) return r.rewrites;
  return -1;
}

// m through both optimizer stages for `device` (no precision conversion in between: float32),
// and the rewrites `pass` reported (it runs in one of them).
inline std::pair<Model, int> optimized_both_stages(Model m, const std::string& device, const std::string& pass,
                                                   std::vector<ShapeBinding> bindings = {}) {
  int rewrites = 0;
  bool reported = false;
  for (PassStage stage : {PassStage::kBeforePrecision, PassStage::kAfterPrecision}) {
    OptimizeOptions o;
    o.stage = stage;
    o.device = device;
    o.bindings = bindings;
    auto reports = optimize(m, o);
    EXPECT_TRUE(reports.has_value()) << reports.status().message();
    if (!reports) return {std::move(m), -1};
    if (const int r = rewrites_of(*reports, pass); r >= 0) rewrites += r, reported = true;
  }
  return {std::move(m), reported ? rewrites : -1};
}

// tests/models/MODEL/model.EXPORTER.onnx optimized with the default options, and the value
// metas of its optimized graph at the shapes of the fixture's inputs.npz.
struct OptimizedFixture {
  std::shared_ptr<Engine> engine;
  std::vector<ValueMeta> metas;
};

inline Expected<OptimizedFixture> optimized_fixture(const std::string& model, const std::string& exporter) {
  const std::filesystem::path dir = std::filesystem::path(INGOT_SOURCE_DIR) / "tests" / "models" / model;
  INGOT_ASSIGN_OR_RETURN(auto engine, Engine::from_onnx((dir / ("model." + exporter + ".onnx")).string()));
  INGOT_ASSIGN_OR_RETURN(auto inputs, read_npz((dir / "inputs.npz").string()));
  ShapeBinding shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape();
  INGOT_ASSIGN_OR_RETURN(auto metas, infer_with(engine->model(), shapes));
  return OptimizedFixture{std::move(engine), std::move(metas)};
}

// A model fixture as it is on disk: tests/models/MODEL/model.EXPORTER.onnx loaded (no pass run),
// its recorded inputs and PyTorch's reference outputs, and the inputs' shapes.
struct FixtureFiles {
  Model model;
  std::map<std::string, Tensor> inputs, reference;
  ShapeBinding shapes;
};

inline Expected<FixtureFiles> load_fixture_files(const std::string& model, const std::string& exporter) {
  const std::filesystem::path dir = std::filesystem::path(INGOT_SOURCE_DIR) / "tests" / "models" / model;
  FixtureFiles f;
  INGOT_ASSIGN_OR_RETURN(f.model, load_onnx((dir / ("model." + exporter + ".onnx")).string()));
  INGOT_ASSIGN_OR_RETURN(f.inputs, read_npz((dir / "inputs.npz").string()));
  INGOT_ASSIGN_OR_RETURN(f.reference, read_npz((dir / "reference.npz").string()));
  for (const auto& [name, t] : f.inputs) f.shapes[name] = t.shape();
  return f;
}

// Outputs of m run on the CPU as it is (no further optimization), for comparing a rewritten
// graph with the original.
inline std::vector<NamedTensor> run_as_is(const Model& m, const std::map<std::string, Tensor>& feeds) {
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  auto out = (*e)->create_context()->run(feeds);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  return out ? *out : std::vector<NamedTensor>{};
}

// The largest elementwise difference between two runs' outputs (same count and shapes expected).
inline double max_output_diff(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].tensor.shape(), b[i].tensor.shape());
    for (int64_t k = 0; k < a[i].tensor.numel() && k < b[i].tensor.numel(); ++k)
      d = std::max(d, std::fabs(a[i].tensor.scalar_as_double(k) - b[i].tensor.scalar_as_double(k)));
  }
  return d;
}

// max |got - want| over want's elements (a fixture output against its reference.npz entry).
inline double max_abs_error(const Tensor& got, const Tensor& want) {
  double err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) err = std::max(err, std::fabs(got.scalar_as_double(i) - want.scalar_as_double(i)));
  return err;
}

}  // namespace ingot::testing
