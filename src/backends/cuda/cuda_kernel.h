// The CUDA kernel contract. Shape inference is not repeated here: the executor runs the
// graph's (CPU) infer() once per input shape, so a CUDA kernel is given concrete shapes and
// preallocated outputs and only enqueues work.
//
//   init()      parse attributes (once, at load).
//   prepare()   constant inputs on the host; upload or pack weights into device memory the
//               kernel owns (through CudaPrepareContext, so the bytes are counted).
//   supports()  at plan time, with every input's dtype, shape and (for constants) value: can
//               this kernel run them? If not the node runs on the CPU with copies around it.
//   workspace_bytes()  scratch the kernel needs for these shapes (one buffer per context,
//               shared by all kernels: they run one after another on one stream). cuBLASLt's
//               scratch is separate (CudaHandles::gemm_workspace) and not counted here.
//   compute()   enqueue on ctx.stream(). It must be capturable into a CUDA graph: no
//               allocation, no synchronisation, no host reads of device data, and the same
//               device pointers every time for the same shapes.
//
// Tensors given to CUDA kernels are Tensor::wrap views of device memory: their data
// pointers must never be dereferenced on the host. Outputs are not zero-filled.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace ingot::cuda {

// "cuda error: ...": turns a CUDA/cuBLAS/cuDNN return code into a Status.
Status cuda_status(cudaError_t e, const char* what);
Status cublas_status(cublasStatus_t e, const char* what);
Status cudnn_status(cudnnStatus_t e, const char* what);
// The last launch's error (cudaGetLastError), as a Status.
Status last_launch_status(const char* what);

#define INGOT_CUDA_RETURN_IF_ERROR(expr) INGOT_RETURN_IF_ERROR(::ingot::cuda::cuda_status((expr), #expr))
#define INGOT_CUBLAS_RETURN_IF_ERROR(expr) INGOT_RETURN_IF_ERROR(::ingot::cuda::cublas_status((expr), #expr))
#define INGOT_CUDNN_RETURN_IF_ERROR(expr) INGOT_RETURN_IF_ERROR(::ingot::cuda::cudnn_status((expr), #expr))

constexpr size_t kGridCounterWords = 1024, kGridScratchBytesPerSm = 1024;

// Library handles of one context (one stream).
struct CudaHandles {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t cudnn = nullptr;  // bound to `stream`
  int sm_count = 0;               // multiprocessors of the device
  int max_smem_per_block = 0;     // shared memory a block may opt in to (bytes)
  int cc_major = 0;               // the device's compute capability, major
  int cc_minor = 0;               // and minor (sm_90a kernels need 9.0 exactly)
  bool allow_tf32 = false;
  // kGridCounterWords words of device memory per context, zero between kernels: a kernel whose
  // CTAs count arrivals in them (the last CTA to finish doing the final step, or the CTAs of a
  // row block meeting) sets them back to zero before it ends (the context's kernels run one
  // after another on its stream).
  unsigned* grid_counter = nullptr;
  // kGridScratchBytesPerSm a multiprocessor (sm_count of them), any content between kernels:
  // what the resident CTAs of a cooperative launch exchange (product_norm's row statistics).
  void* grid_scratch = nullptr;
  size_t grid_scratch_bytes = 0;
  // cuBLASLt's scratch (kGemmWorkspaceBytes, lt_gemm.h), used by lt_gemm alone: no other kernel
  // writes it, so the clears cuBLASLt enqueues before some of its kernels depend only on the
  // product before (cuda_graph_gemm_clears.h), not on whatever ran in between.
  void* gemm_workspace = nullptr;
  size_t gemm_workspace_bytes = 0;
  // INGOT_CUDA_SKIP_OPS (a timing aid, cuda_context.cc): op types whose steps enqueue nothing,
  // and parts of ops that kernels leave out ("Attention.core": the flash kernel). Empty normally.
  std::set<std::string> skip_ops;
  bool skips(const std::string& what) const { return !skip_ops.empty() && skip_ops.count(what) > 0; }
};

// A device buffer owned by a kernel or the executor; freed with it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class CudaPrepareContext {
 public:
  CudaPrepareContext(std::vector<const Tensor*> constants, std::function<Expected<Tensor>(const Tensor&)> upload)
      : constants_(std::move(constants)), upload_(std::move(upload)) {}
  // Input i's host contents when it is a constant (initializer), else null.
  const Tensor* constant(int i) const {
    return size_t(i) < constants_.size() ? constants_[size_t(i)] : nullptr;
  }
  // Copies a host tensor (for example a repacked or converted weight) to device memory the
  // engine keeps for its lifetime; counted in the engine's weight bytes.
  Expected<Tensor> upload(const Tensor& host) const { return upload_(host); }

 private:
  std::vector<const Tensor*> constants_;
  std::function<Expected<Tensor>(const Tensor&)> upload_;
};

class CudaComputeContext {
 public:
  CudaComputeContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<const Tensor*> host_values,
                     std::vector<Tensor*> outputs, const CudaHandles& handles, void* workspace, size_t workspace_bytes,
                     L2Prefetch prefetch = {}, L2Prefetch prefetch_after = {})
      : node_(node), inputs_(std::move(inputs)), host_values_(std::move(host_values)), outputs_(std::move(outputs)),
        handles_(handles), workspace_(workspace), workspace_bytes_(workspace_bytes), prefetch_(prefetch),
        prefetch_after_(prefetch_after) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return int(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[size_t(i)] != nullptr; }
  const Tensor& input(int i) const { return *inputs_[size_t(i)]; }  // device memory
  // The input's contents on the host when known at plan time (constants, folded shapes).
  const Tensor* host_value(int i) const { return i < num_inputs() ? host_values_[size_t(i)] : nullptr; }
  int num_outputs() const { return int(outputs_.size()); }
  bool has_output(int i) const { return i < num_outputs() && outputs_[size_t(i)] != nullptr; }
  Tensor& output(int i) { return *outputs_[size_t(i)]; }  // device memory, shape from infer()

  cudaStream_t stream() const { return handles_.stream; }
  const CudaHandles& handles() const { return handles_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  // The next steps' weights, for a kernel that prefetches_l2() to hand to its device code.
  const L2Prefetch& l2_prefetch() const { return prefetch_; }
  // For a kernel that prefetches_l2_after(): the next steps' weights, for its last kernel.
  const L2Prefetch& l2_prefetch_after() const { return prefetch_after_; }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<const Tensor*> host_values_;
  std::vector<Tensor*> outputs_;
  const CudaHandles& handles_;
  void* workspace_;
  size_t workspace_bytes_;
  L2Prefetch prefetch_, prefetch_after_;
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual Status init(const Node& node, int opset) { (void)node; (void)opset; return Status::ok(); }
  virtual Status prepare(const CudaPrepareContext& ctx) { (void)ctx; return Status::ok(); }
  // Empty string: supported. Otherwise why not ("dtype int8"), for `ingot build --verbose`.
  virtual std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const {
    (void)inputs; (void)outputs;
    return {};
  }
  virtual size_t workspace_bytes(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const {
    (void)inputs; (void)outputs;
    return 0;
  }
  virtual Status compute(CudaComputeContext& ctx) const = 0;
  // True: compute() passes ctx.l2_prefetch() to a kernel of its own (issue_l2_prefetch,
  // l2_prefetch.cuh), and the plan gives it the next product's weights (cuda_l2_prefetch.h,
  // CudaExecutor::plan_prefetch). late_inputs: inputs this node reads only after that kernel
  // (ingot.Attention's out-projection), which are that product when present; a later such
  // node's other inputs count as read before its own prefetch.
  virtual bool prefetches_l2() const { return false; }
  // True (with prefetches_l2): l2_prefetch() holds only the late inputs, and the node's last
  // kernel, which runs after the product that reads them, takes l2_prefetch_after(): the next
  // steps' weights (an Attention with its LayerNorm, in the place of the LayerNorm node that
  // asked for them before: asked for by the core with the out-projection's weights, they share
  // HBM with that product).
  virtual bool prefetches_l2_after() const { return false; }
  virtual std::vector<int> late_inputs() const { return {}; }
  // View ops (Reshape, Squeeze, Flatten...): output `output` is input i's buffer, reinterpreted
  // with the output's shape; the executor does the aliasing and never calls compute().
  virtual int output_aliases_input(int output) const { (void)output; return -1; }
};

using CudaKernelFactory = std::function<Expected<std::unique_ptr<CudaKernel>>(const Node& node, int opset)>;

class CudaKernelRegistry {
 public:
  static CudaKernelRegistry& instance();
  bool add(const std::string& domain, const std::string& op_type, CudaKernelFactory factory);
  const CudaKernelFactory* find(const std::string& domain, const std::string& op_type) const;
  std::vector<std::string> ops() const;  // "domain:op", sorted

 private:
  std::map<std::string, CudaKernelFactory> map_;
};

template <class K>
Expected<std::unique_ptr<CudaKernel>> make_cuda_kernel(const Node& node, int opset) {
  auto k = std::make_unique<K>();
  INGOT_RETURN_IF_ERROR(k->init(node, opset));
  return std::unique_ptr<CudaKernel>(std::move(k));
}

}  // namespace ingot::cuda

// Registers class K (derived from cuda::CudaKernel) for an op:
//   INGOT_REGISTER_CUDA_KERNEL("", Relu, ReluKernel);  INGOT_REGISTER_CUDA_KERNEL("ingot", Attention, ...)
#define INGOT_REGISTER_CUDA_KERNEL(domain, op, K)                     \
  static const bool INGOT_CONCAT(ingot_cuda_reg_, __COUNTER__) =      \
      ::ingot::cuda::CudaKernelRegistry::instance().add(domain, #op, &::ingot::cuda::make_cuda_kernel<K>)
