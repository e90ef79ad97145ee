// Engine: an immutable, loaded model with its kernels; share it between threads.
// ExecutionContext: one per thread of execution; run() validates inputs and runs the graph.
#pragma once

#include <cstdlib>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "passes/float_io.h"
#include "passes/pass.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/profile.h"

namespace ingot {

struct EngineOptions {
  // cpu | cuda; "" (any): an engine file's own device, cpu for an ONNX model.
  std::string device;
  // fp32 | fp16 | bf16. cpu bf16: matrix products in bfloat16 with fp32 accumulation; cuda
  // fp16/bf16: the graph's float32 tensors converted (passes/convert_precision.h).
  std::string precision = "fp32";
  int threads = 0;  // 0: all cores
  bool cuda_graph = true;   // cuda: capture a CUDA graph per input shape and replay it
  bool allow_tf32 = false;  // cuda fp32: matrix products may use TF32 tensor cores
  // "model": inputs and outputs keep the model's dtypes; "fp16": its float32 inputs and outputs
  // are float16 (passes/float_io.h).
  std::string io_precision = "model";
  // The inputs and outputs that io_precision retyped (load() reads them from the engine file).
  RetypedIo retyped_io;
  bool optimize = true;                      // run the optimizer passes
  // The ONNX file the graph came from (load() sets it from an engine's manifest; empty: the
  // model's own path).
  std::string source_model;
  bool from_engine_file = false;             // set by load(): the graph is optimized and converted already
  std::set<std::string> disabled_passes;     // by name
  // The shapes the engine serves. None: a model with static inputs serves exactly those; a
  // model with dynamic inputs runs any shape, without a static memory plan.
  std::vector<Profile> profiles;
  // cpu without a static plan: plan each input shape's memory at its first run and keep an arena
  // per context (Engine::plan_for_shapes); false (or INGOT_PLAN_EACH_SHAPE=0): a heap buffer per
  // value at every run.
  bool plan_each_shape = true;
  // Extra input shapes the optimizer must keep the graph correct for (tests, tools).
  std::vector<std::map<std::string, Shape>> shape_bindings;
  // What the device chose when the engine was built (Engine::tune; load() reads it from the
  // engine file), or null.
  nlohmann::json device_tuning;
};

// A named model input or output as users see it.
struct IoInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::optional<SymShape> shape;
  // The dtype the ONNX model declares: float32 where --io-precision fp16 made dtype float16
  // (what a reference run of the model takes and gives), else dtype.
  DType model_dtype = DType::kUndefined;
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
  // Writes an engine file (see src/plan/engine_file.h) that load() reads back.
  Status save(const std::string& path) const;
  const EngineOptions& options() const { return opts_; }

  const Model& model() const { return model_; }
  // The ONNX model this engine was built from (an engine file's own path is model().path).
  const std::string& source_model() const { return opts_.source_model; }
  // What the optimizer did (empty when it did not run).
  const std::vector<PassReport>& pass_reports() const { return pass_reports_; }
  const std::vector<Profile>& profiles() const { return opts_.profiles; }
  // The static memory plan, or null when shapes are not bounded (dynamic, no profile).
  const MemoryPlan* memory_plan() const { return plan_ ? &*plan_ : nullptr; }
  // For a cpu engine without a static plan: a plan for exactly these input shapes (ordered as
  // inputs()), made at the first run of each and kept, so that contexts run on an arena instead
  // of a heap buffer per value. Fresh buffers of a few MB cost their page faults again at every
  // run: ResNet-50 b1 spent ~5 ms of ~57 on them (developer session 44). Past kMaxShapePlans
  // shapes, the largest plan kept (values too large for their slot go to the heap). Null when the
  // shapes cannot be planned (nothing of known size to place).
  std::shared_ptr<const MemoryPlan> plan_for_shapes(const std::vector<Tensor>& inputs) const;
  static constexpr size_t kMaxShapePlans = 64;
  int64_t weight_bytes() const;
  // Refuses shapes outside every profile, naming the input, its shape and the ranges.
  Status check_profiles(const std::map<std::string, Tensor>& inputs) const;
  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  const IoInfo* find_input(const std::string& name) const;

  std::unique_ptr<ExecutionContext> create_context() const;

  // The GPU (or other device) executor; null for cpu engines.
  const DeviceExecutor* device() const { return device_.get(); }
  // The device the engine was built for and runs on (cuda engines).
  const std::optional<DeviceProperties>& device_properties() const { return device_props_; }

  // Build-time tuning of a device engine (DeviceExecutor::tune): one run on `inputs`, within a
  // profile; what the device chose is kept in options().device_tuning and saved with the engine,
  // and applies to the engines that load it (this one keeps what it chose). Nothing for cpu.
  Status tune(const std::map<std::string, Tensor>& inputs);
  // tune() at each profile's opt shapes (a model with static inputs: at those), on
  // synthetic_inputs(). What `ingot build` and ingot.build() do.
  Status tune_at_opt_shapes();
  // Inputs at `shapes` (an input not there: its declared shape) for tuning: ones for integer and
  // bool inputs (valid indices, masks that attend everywhere), a fixed draw in [-1, 1) for
  // floating-point ones. Nullopt when an input has no shape to take or a dtype it cannot fill.
  std::optional<std::map<std::string, Tensor>> synthetic_inputs(const std::map<std::string, Shape>& shapes) const;

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
  std::optional<MemoryPlan> plan_;
  mutable std::mutex shape_plans_mu_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<const MemoryPlan>> shape_plans_;
  mutable std::shared_ptr<const MemoryPlan> largest_shape_plan_;
  std::vector<IoInfo> inputs_, outputs_;
  std::unique_ptr<GraphExecutor> executor_;  // cpu: runs the graph; other devices: shape inference
  std::unique_ptr<DeviceExecutor> device_;
  std::optional<DeviceProperties> device_props_;
  Status make_device_executor(const std::vector<int64_t>& max_bytes);
  Expected<std::vector<int64_t>> max_value_bytes();
};

// Owns its activation arena (the engine's memory plan, or for a cpu engine without one the plan
// of the shapes it runs: grown to the largest), so contexts run concurrently; the arena is freed
// with the context. One context must not run on two threads at once.
class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const Engine> engine);
  // Runs the model; outputs in the model's output order.
  Expected<std::vector<NamedTensor>> run(const std::map<std::string, Tensor>& inputs);
  int64_t arena_bytes() const { return arena_bytes_; }
  // Device engines: device times of the last run, and the device memory this context holds.
  const DeviceContext* device() const { return device_.get(); }

 private:
  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<DeviceContext> device_;
  Status device_error_;  // why the device context could not be made (reported by run())
  std::unique_ptr<std::byte, void (*)(void*)> arena_{nullptr, std::free};
  int64_t arena_bytes_ = 0;
  // Whether the arena holds `bytes` (> 0), grown when it can be; false: run on per-value buffers.
  bool arena_holds(int64_t bytes);
};

}  // namespace ingot
