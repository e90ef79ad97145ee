// Host-side helpers of the CUDA data-movement kernel classes (tensor_*.cc). The input
// readers and index checks are the CPU kernels' own (backends/cpu/tensor_util.h), so a value
// the GPU kernel validates on the host fails with the CPU kernel's message.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/tensor_util.h"
#include "backends/cpu/strided_views.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/tensor_impl.h"

namespace ingot::cuda::tensor_host {

using tensor_ops::ints_str;
using tensor_ops::prod;

// "" when every output's shape is known at plan time; the GPU kernels need preallocated outputs.
inline std::string dynamic_outputs_reason(const std::vector<OutputMeta>& outputs) {
  for (const OutputMeta& o : outputs)
    if (o.dynamic) return "output shape depends on input values unknown at plan time";
  return {};
}

// "" when input i (if present) has a value known at plan time.
inline std::string host_value_reason(const std::vector<InputMeta>& inputs, int i, const char* name) {
  if (size_t(i) < inputs.size() && inputs[size_t(i)].present && !inputs[size_t(i)].value)
    return std::string("input ") + std::to_string(i) + " (" + name + ") is not known at plan time";
  return {};
}

inline std::string rank_reason(size_t rank, size_t max) {
  if (rank <= max) return {};
  return "rank " + std::to_string(rank) + " (the CUDA kernel handles up to " + std::to_string(max) + ")";
}

// "" when the copy's merged dims fit the device kernels.
inline std::string copy_reason(const CopyDesc& d) {
  int r = merge_copy_dims(d).rank;
  if (r <= kMaxKernelDims) return {};
  return std::to_string(r) + " non-mergeable dims (the CUDA copy handles up to " + std::to_string(kMaxKernelDims) + ")";
}

// out = transpose(in, perm) as a copy descriptor.
inline CopyDesc permute_desc(const Shape& in, const std::vector<int>& perm) {
  std::vector<int64_t> st = strides_of(in);
  CopyDesc d;
  for (int p : perm) d.push(in[size_t(p)], st[size_t(p)]);
  return d;
}

// An output without elements: nothing to enqueue (its tensor may have no buffer).
inline bool empty_output(CudaComputeContext& ctx) { return ctx.output(0).numel() == 0; }

inline Status launch_result(cudaError_t e, const char* what) { return cuda_status(e, what); }

// The bit pattern of v converted to dtype t (the CPU kernels' from_double), for fill values.
inline uint64_t element_bits(DType t, double v) {
  uint64_t bits = 0;
  dispatch_all(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T x = tensor_ops::from_double<T>(v);
    std::memcpy(&bits, &x, sizeof(T));
  });
  return bits;
}

// The first element of a host tensor as raw bits (element sizes up to 8 bytes).
inline uint64_t first_element_bits(const Tensor& t) {
  uint64_t bits = 0;
  if (t.numel() > 0) std::memcpy(&bits, t.raw(), dtype_size(t.dtype()));
  return bits;
}

}  // namespace ingot::cuda::tensor_host
