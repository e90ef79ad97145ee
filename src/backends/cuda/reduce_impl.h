// Reductions over any set of axes (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/SumSquare, the
// global pools) and BatchNormalization's per-channel affine, on the device (reduce.cu).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

enum class ReduceOp : int32_t { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kSumSquare };

constexpr int kMaxReduceRuns = 8;

// The input collapsed into runs of kept and of reduced axes (axes of size 1 dropped), as the
// CPU kernel does. The innermost run is either reduced (each output reduces `count` elements
// laid out as reduced runs x contiguous `inner`) or kept (outputs are contiguous along it and
// each reduces `count` elements of the reduced runs).
struct ReduceGeometry {
  int64_t num_out = 1;  // output elements
  int64_t count = 1;    // input elements per output
  int64_t inner = 1;    // length of the innermost run
  bool inner_reduced = false;
  int nkept = 0;  // kept runs, outer to inner, without the innermost run
  int64_t kept_dims[kMaxReduceRuns] = {}, kept_strides[kMaxReduceRuns] = {};
  int nred = 0;  // reduced runs, outer to inner, without the innermost run
  int64_t red_dims[kMaxReduceRuns] = {}, red_strides[kMaxReduceRuns] = {};
};

// How many blocks share one output when there are few outputs with long rows (partial results
// then go through the workspace and a second kernel combines them).
inline int64_t reduce_splits(const ReduceGeometry& g) {
  if (!g.inner_reduced || g.count < 32768) return 1;
  const int64_t want = (2048 + g.num_out - 1) / g.num_out;  // enough blocks to fill the GPU
  const int64_t most = g.count / 8192;                       // each keeps >= 8192 elements
  return std::max<int64_t>(1, std::min<int64_t>({want, most, 1024}));
}

inline size_t reduce_workspace_bytes(const ReduceGeometry& g) {
  const int64_t s = reduce_splits(g);
  return s > 1 ? size_t(g.num_out * s) * sizeof(float) : 0;
}

// y[num_out] = op over x (both `dtype`: float32, float16 or bfloat16; float32 accumulation).
// `workspace` holds reduce_workspace_bytes(g).
cudaError_t launch_reduce(DType dtype, ReduceOp op, const ReduceGeometry& g, const void* x, void* y, void* workspace,
                          cudaStream_t stream);

// a[c] = scale[c] / sqrt(var[c] + eps), b[c] = bias[c] - mean[c] * a[c] (float64 arithmetic as
// on the CPU, stored as float32); the parameters share `dtype`.
cudaError_t launch_batch_norm_fold(DType dtype, const void* scale, const void* bias, const void* mean,
                                   const void* var, float eps, int64_t c, float* a, float* b, cudaStream_t stream);

// y = x * a[ch] + b[ch] over x [n, c, spatial] (NCHW), float32 arithmetic.
cudaError_t launch_channel_affine(DType dtype, const void* x, void* y, const float* a, const float* b, int64_t n,
                                  int64_t c, int64_t spatial, cudaStream_t stream);

}  // namespace ingot::cuda
