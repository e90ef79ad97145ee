// Engine: an immutable, loaded model with its kernels; share it between threads.
// ExecutionContext: one per thread of execution; run() validates inputs and runs the graph.
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "runtime/executor.h"

namespace ingot {

struct EngineOptions {
  std::string device = "cpu";
  int threads = 0;  // 0: all cores
  bool optimize = true;                      // run the optimizer passes
  std::set<std::string> disabled_passes;     // by name
  // Input shapes to optimize for: opt first, then each profile's min and max.
  std::vector<std::map<std::string, Shape>> shape_bindings;
};

// A named model input or output as users see it.
struct IoInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::optional<SymShape> shape;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class ExecutionContext;

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // An ONNX model or an ingot engine file, told apart by content.
  static Expected<std::shared_ptr<Engine>> load(const std::string& path, const EngineOptions& opts = {});
  static Expected<std::shared_ptr<Engine>> from_onnx(const std::string& path, const EngineOptions& opts = {});
  static Expected<std::shared_ptr<Engine>> from_model(Model model, const EngineOptions& opts = {});

  const Model& model() const { return model_; }
  // What the optimizer did (empty when it did not run).
  const std::vector<PassReport>& pass_reports() const { return pass_reports_; }
  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  const IoInfo* find_input(const std::string& name) const;

  std::unique_ptr<ExecutionContext> create_context() const;

  // Checks names, dtypes, ranks, fixed dims and that symbolic dims agree across inputs.
  Status validate_inputs(const std::map<std::string, Tensor>& inputs) const;
  // Shape inference for concrete input shapes: every value's dtype and shape.
  Expected<std::vector<ValueMeta>> infer_shapes(const std::map<std::string, Shape>& input_shapes) const;

 private:
  friend class ExecutionContext;
  Engine() = default;
  Model model_;
  EngineOptions opts_;
  std::vector<PassReport> pass_reports_;
  std::vector<IoInfo> inputs_, outputs_;
  std::unique_ptr<GraphExecutor> executor_;
};

class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const Engine> engine) : engine_(std::move(engine)) {}
  // Runs the model; outputs in the model's output order.
  Expected<std::vector<NamedTensor>> run(const std::map<std::string, Tensor>& inputs);

 private:
  std::shared_ptr<const Engine> engine_;
};

}  // namespace ingot
