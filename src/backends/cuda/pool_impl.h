// MaxPool and AveragePool over 1 to 3 spatial dims of an NCHW or a channels-last tensor, and the
// global pools of a channels-last tensor (pool.cu; NCHW global pools are reductions, reduce.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

enum class PoolMode : int32_t { kMax, kAvg };

// Spatial dims right-aligned into three (leading ones: size 1, kernel 1, stride 1, no pads).
struct PoolGeometry {
  int64_t n = 0, c = 0;  // batch and channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

// Max: NaN wins, -inf for a window entirely in padding. Average: divides by the window's
// elements inside the input, or with count_include_pad by those inside the explicitly padded
// input (ceil_mode overhang beyond the end pads is not counted), as the CPU kernel does.
// `channels_last`: x is [N, in..., C] and y [N, out..., C]; else both NCHW.
cudaError_t launch_pool(DType dtype, PoolMode mode, bool count_include_pad, bool channels_last, const PoolGeometry& g,
                        const void* x, void* y, cudaStream_t stream);

// y[n, c] = max or mean of x[n, s, c] over s < spatial (x channels-last, float32 accumulation).
cudaError_t launch_global_pool_channels_last(DType dtype, PoolMode mode, int64_t n, int64_t spatial, int64_t c,
                                             const void* x, void* y, cudaStream_t stream);

}  // namespace ingot::cuda
