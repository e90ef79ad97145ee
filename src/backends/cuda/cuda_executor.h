// The CUDA executor: one optimized graph on one GPU.
//
// At load: every node gets its CUDA kernel, or (no kernel registered) its CPU kernel as a
// fallback; every constant read by a CUDA kernel is uploaded once into one weights buffer.
//
// Per distinct set of input shapes (a "shape plan", shared by all contexts): the graph's shape
// inference runs on the host (shape subgraphs fold to constants there, so a CUDA kernel never
// computes a shape), each node is placed (CUDA unless its kernel's supports() refuses these
// dtypes/shapes), folded constants that CUDA kernels read are uploaded, views are resolved to
// their input's buffer, and every other value gets a place: the activation arena of the
// static memory plan (engines with profiles: sized for the profiles' maxima, so every shape
// they allow uses the same offsets), or a per-shape plan for unbounded dynamic shapes.
//
// Per context and shape plan (an "instance", cuda_context.cc): the buffers the plan does not
// put in the arena (graph inputs, outputs), the kernels' arguments with device pointers bound,
// and, when every node runs on the GPU, a CUDA graph captured once and replayed.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "plan/memory_plan.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace ingot::cuda {

// Where a value lives during a run of one shape plan.
struct ValueHome {
  enum class Kind {
    kUnused,    // not needed on the device
    kHost,      // known on the host (folded constant) and read only by the host
    kWeight,    // the engine's weights buffer, at `offset`
    kConstant,  // the shape plan's folded-constant buffer, at `offset`
    kArena,     // the context's activation arena, at `offset`
    kOwn,       // a buffer of its own in each instance (graph inputs, outputs, unplanned values)
    kView,      // the buffer of value `root`, reinterpreted
  };
  Kind kind = Kind::kUnused;
  int64_t offset = 0;
  int64_t bytes = 0;
  ValueId root = kNoValue;  // kView
};

struct ShapePlan {
  std::string key;
  std::vector<ValueMeta> metas;      // per value: dtype, shape, host contents when folded
  std::vector<ValueHome> homes;      // per value
  struct Step {
    int node = -1;
    bool on_device = true;
    bool view = false;               // every output is a view of an input: nothing to launch
    std::string fallback_reason;     // why a CPU step is not on the GPU
    std::vector<ByteRange> prefetch; // ranges of the weights buffer its kernel prefetches into L2
    std::vector<ByteRange> prefetch_after;  // those its last kernel prefetches (prefetches_l2_after)
  };
  std::vector<Step> steps;           // in execution order, folded nodes left out
  bool device_only = true;           // every step on the GPU: capturable as one CUDA graph
  bool uses_static_plan = false;     // arena offsets from the engine's plan
  MemoryPlan memory;                 // arena offsets (the static plan's copy, or this shape's)
  size_t workspace_bytes = 0;
  DeviceBuffer constants;            // folded constants read by CUDA kernels
  int64_t own_bytes = 0;             // sum of kOwn buffers
};

struct NodeKernels {
  std::unique_ptr<CudaKernel> cuda;  // null: CPU fallback only
  std::unique_ptr<OpKernel> cpu;     // made when the node may run on the CPU
  int opset = 0;
};

class CudaExecutor final : public DeviceExecutor {
 public:
  static Expected<std::unique_ptr<CudaExecutor>> create(const Graph& graph, const std::map<std::string, int64_t>& opsets,
                                                        const DeviceCreateOptions& options);
  ~CudaExecutor() override;

  Expected<std::unique_ptr<DeviceContext>> create_context() const override;
  DeviceMemoryReport memory() const override;
  int64_t arena_bytes() const override { return static_plan_ ? static_plan_->arena_bytes : 0; }
  const MemoryPlan* memory_plan() const override { return static_plan_ ? &*static_plan_ : nullptr; }
  std::vector<FallbackOp> fallback_ops() const override;
  Status plan_shapes(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) const override;
  // Wide tuning of the large matrix products (cuda_tuning.h).
  Expected<nlohmann::json> tune(const std::vector<Tensor>& inputs, const nlohmann::json& previous) const override;

  // The plan for these input dtypes and shapes, made on first use (thread-safe).
  Expected<std::shared_ptr<const ShapePlan>> plan_for(const std::vector<DType>& dtypes,
                                                      const std::vector<Shape>& shapes) const;

  const Graph& graph() const { return graph_; }
  const NodeKernels& kernels(int node) const { return nodes_[size_t(node)]; }
  const DeviceCreateOptions& options() const { return opts_; }
  const std::vector<int>& order() const { return shapes_->order(); }
  std::byte* weights() const { return static_cast<std::byte*>(weights_.get()); }
  int sm_count() const { return sm_count_; }
  int max_smem_per_block() const { return max_smem_per_block_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }

 private:
  CudaExecutor(const Graph& g, DeviceCreateOptions o) : graph_(g), opts_(std::move(o)) {}
  Status load(const std::map<std::string, int64_t>& opsets);
  Status upload_weights();
  Expected<std::shared_ptr<ShapePlan>> make_plan(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes,
                                                 const std::string& key) const;
  Status place_values(ShapePlan& plan, const std::vector<bool>& read_on_device) const;
  Status upload_constants(ShapePlan& plan) const;
  void plan_prefetch(ShapePlan& plan) const;
  Expected<const OpKernel*> cpu_kernel(int node) const;
  PlanInput plan_input(const std::vector<int64_t>& bytes, const std::vector<bool>* on_device) const;

  const Graph& graph_;
  DeviceCreateOptions opts_;
  std::unique_ptr<GraphExecutor> shapes_;  // the CPU graph executor, used for shape inference only
  mutable std::vector<NodeKernels> nodes_;  // CPU kernels of CUDA nodes are made when first needed
  DeviceBuffer weights_;
  std::map<ValueId, int64_t> weight_offset_;
  std::vector<DeviceBuffer> kernel_buffers_;  // kernels' own uploads (repacked weights)
  int64_t kernel_buffer_bytes_ = 0;
  std::optional<MemoryPlan> static_plan_;
  mutable std::map<int, FallbackOp> fallbacks_;  // by node index
  int sm_count_ = 0;
  int max_smem_per_block_ = 0;  // shared memory a block may opt in to
  int cc_major_ = 0, cc_minor_ = 0;  // compute capability
  int64_t l2_bytes_ = 0;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const ShapePlan>> plans_;
};

}  // namespace ingot::cuda
