// A product with the LayerNorm that follows it in its epilogue, on Hopper (product_norm.cu):
//
//   Y = LayerNorm(A·W + bias + R) · gamma + beta    over the last axis; A [M, K], W [K, N]
//
// For the products of a transformer's hidden width that a LayerNorm follows (BERT's attention
// out-projection and second FFN product, with the residual): the unfused pair is cuBLASLt's
// product writing the sum and a LayerNorm kernel reading it back; here the sum never leaves the
// SMs. It is one tile of 128 rows x 192 columns a CTA, so a row's N columns lie on N / 192 CTAs:
// those exchange each row's mean and centered sum of squares through `exchange` and wait for
// each other, which needs every CTA resident at once (a cooperative launch of at most one CTA a
// multiprocessor). Hence product_norm_fits: float16 or bfloat16, compute capability 9.0, N a
// multiple of 192 up to kProductNormMaxN, and tiles that fill but do not exceed the GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

constexpr int64_t kProductNormTileRows = 128, kProductNormTileCols = 192, kProductNormMaxN = 960;

// Bytes of the exchange space the kernel needs for M rows of width N (a float pair a row and
// column block). The context's grid scratch holds it (CudaHandles::grid_scratch).
size_t product_norm_exchange_bytes(int64_t M, int64_t N);

// Whether the fused kernel takes this shape on a device of `sm_count` multiprocessors and
// compute capability cc_major.cc_minor: see the top of this file. It takes it only when its
// tiles fill at least three quarters of the multiprocessors; fewer tiles leave SMs idle that
// cuBLASLt's smaller tiles would use.
bool product_norm_fits(DType dtype, int64_t M, int64_t N, int64_t K, int sm_count, int cc_major, int cc_minor);

struct ProductNormLaunch {
  DType dtype = DType::kFloat16;  // of every tensor
  const void* a = nullptr;         // [M, K]
  const void* w = nullptr;         // [K, N]
  const void* bias = nullptr;      // [N] or null
  const void* residual = nullptr;  // [M, N] or null
  const void* gamma = nullptr;     // [N]
  const void* beta = nullptr;      // [N] or null
  void* y = nullptr;               // [M, N]
  int64_t M = 0, N = 0, K = 0;
  float epsilon = 1e-5f;
  bool params_constant = false;    // bias, gamma, beta: read before the wait for the kernel before
  void* exchange = nullptr;        // product_norm_exchange_bytes(M, N), any content
  unsigned* counters = nullptr;    // ceil(M / 128) words, zero on entry; zero again on exit
  int sm_count = 0;
  L2Prefetch prefetch;             // requested into L2 once the products' copies are asked for
};

// Launches the kernel (cooperative; dependent when dependent_launch_enabled()). Expects
// product_norm_fits and 16-byte aligned tensors.
cudaError_t launch_product_norm(const ProductNormLaunch& p, cudaStream_t stream);

}  // namespace ingot::cuda
