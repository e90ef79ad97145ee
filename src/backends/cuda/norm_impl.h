// Launchers of the normalisation, softmax and GELU kernels (device code in norm_layer.cu,
// norm_softmax.cu and norm_gelu.cu), shared by norm.cc. Pointers are device memory; every
// launcher enqueues on `stream` and returns the launch's error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

// One row-normalisation launch: Y[r] = (s[r] - mean) / sqrt(var + epsilon) * gamma + beta over
// rows of length d, where s[r] = X[r] (LayerNormalization) or (X[r] + bias) + skip[r]
// (ingot.SkipLayerNorm, rounded to `dtype` after each addition as the unfused graph stores it),
// or, with partials, the sum of a product's float32 partial rows + bias + skip[r] rounded to
// `dtype` once, as a product's epilogue rounds it (product_norm.cc's K split).
struct RowNormLaunch {
  DType dtype = DType::kFloat32;        // of x, skip, y and sum
  DType param_dtype = DType::kFloat32;  // of gamma, beta and bias: `dtype`, or float32
  const void* x = nullptr;
  // In place of x: `parts` float32 arrays [rows, d], one after another, summed in that order.
  // Float16/bfloat16 rows of at most 128 vectors of 16 bytes (row_norm_takes_partials), dense.
  const float* partials = nullptr;
  int parts = 0;
  const void* skip = nullptr;   // null: LayerNormalization
  const void* bias = nullptr;   // [d] or null
  const void* gamma = nullptr;  // [d]
  const void* beta = nullptr;   // [d] or null (zero)
  // gamma and beta are constants of the plan (never written while it runs): the kernel may read
  // them before it waits for the kernel before (cuda_dependent_launch.h).
  bool params_constant = false;
  // May be x itself (in place, without skip): every element is read, by the thread that writes
  // it, before it is written (product_norm.cc's LayerNorm after a product that took none).
  void* y = nullptr;
  void* sum = nullptr;      // s, or null (SkipLayerNorm's optional output 1)
  void* mean = nullptr;     // [rows] or null (LayerNormalization's optional outputs)
  void* inv_std = nullptr;  // [rows] or null
  DType stat_dtype = DType::kFloat32;  // of mean and inv_std: float32, float16 or bfloat16
  int64_t rows = 0, d = 0;
  // Row r reads row (r % period) of x / skip: `rows` when dense, fewer when broadcast along
  // leading dims (position embeddings [S, H] added to [B, S, H]).
  int64_t x_period = 0, skip_period = 0;
  float epsilon = 1e-5f;
  int sm_count = 0;  // multiprocessors, to size grid-stride grids (0: unknown)
  L2Prefetch prefetch;  // weights the next steps read, requested by the kernel
};
cudaError_t launch_row_norm(const RowNormLaunch& a, cudaStream_t stream);

// Most partial products a launch sums, and whether rows of d elements of `dtype` (gamma, beta and
// bias of the same dtype) can be normalised from partials.
constexpr int kMaxRowNormParts = 4;
bool row_norm_takes_partials(DType dtype, int64_t d);

// A parameter broadcast to the normalised block [dims...]: element k of the block reads
// src[sum_i idx_i(k) * strides[i]] (stride 0 along broadcast dims).
constexpr int kMaxParamRank = 8;
struct ParamBroadcast {
  int rank = 0;
  int64_t dims[kMaxParamRank] = {};
  int64_t strides[kMaxParamRank] = {};
};
// Writes the d values of the broadcast parameter as float32 into dst (d floats).
cudaError_t launch_expand_param(const void* src, DType src_dtype, const ParamBroadcast& b, int64_t d, float* dst,
                                cudaStream_t stream);

// Softmax (or LogSoftmax when `log`) of x viewed as [outer, n, inner], over n.
cudaError_t launch_softmax(const void* x, void* y, DType dtype, int64_t outer, int64_t n, int64_t inner, bool log,
                           int sm_count, cudaStream_t stream);

// y = GELU(x) elementwise over n elements: exact (erf) or tanh approximation.
cudaError_t launch_gelu(const void* x, void* y, DType dtype, int64_t n, bool tanh_approx, int sm_count,
                        cudaStream_t stream);

}  // namespace ingot::cuda
