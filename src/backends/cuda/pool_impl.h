// MaxPool and AveragePool over 1 to 3 spatial dims of an NCHW tensor (pool.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

enum class PoolMode : int32_t { kMax, kAvg };

// Spatial dims right-aligned into three (leading ones: size 1, kernel 1, stride 1, no pads).
struct PoolGeometry {
  int64_t planes = 0;  // N * C
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

// One output element per thread. Max: NaN wins, -inf for a window entirely in padding. Average:
// divides by the window's elements inside the input, or with count_include_pad by those inside
// the explicitly padded input (ceil_mode overhang beyond the end pads is not counted), as the
// CPU kernel does.
cudaError_t launch_pool(DType dtype, PoolMode mode, bool count_include_pad, const PoolGeometry& g, const void* x,
                        void* y, cudaStream_t stream);

}  // namespace ingot::cuda
