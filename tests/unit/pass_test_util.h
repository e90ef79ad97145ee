// What optimizer-pass tests ask of an optimized model: how often a pass rewrote it, and the
// shapes of its values at a test fixture's recorded inputs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/npy.h"
#include "passes/pass.h"
#include "runtime/engine.h"

namespace ingot::testing {

// The rewrites `pass` reported, -1 when it did not report.
inline int rewrites_of(const std::vector<PassReport>& reports, const std::string& pass) {
  for (const PassReport& r : reports)
    if (r.name == pass) return r.rewrites;
  return -1;
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

}  // namespace ingot::testing
