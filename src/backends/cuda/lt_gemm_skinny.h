// A GEMM of ingot's own for the few-row products of small-batch inference, which lt_gemm()
// times against cuBLASLt's candidates and uses where it is faster.
//
//   C[M, N] = act(A[M, K] · W[K, N] + bias[N])     row-major, dense, float16 or bfloat16,
//                                                  float32 accumulation
//
// Why: at batch 1 × 128 tokens a transformer's four products per layer are weight streams (BERT's
// FFN: 4.7 MB of weights, 0.6 GFLOP), but cuBLASLt's kernels for them run 6-8 µs on an H100 where
// the weights take 1.6 µs to read: their tiles leave most SMs idle or serialise a long K loop.
// This kernel splits K over a thread-block cluster of up to 8 CTAs, so ~130 CTAs stream disjoint
// slices of W at once, and the cluster sums its partial tiles through distributed shared memory
// (no workspace, no second launch, nothing to reset between CUDA graph replays).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

enum class SkinnyActivation { kNone, kRelu, kGeluTanh };

struct SkinnyGemmArgs {
  const void* a = nullptr;     // [M, K]
  const void* w = nullptr;     // [K, N]
  const void* bias = nullptr;  // [N] or null
  void* c = nullptr;           // [M, N]
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::kFloat16;
  SkinnyActivation activation = SkinnyActivation::kNone;
  int splits = 1;  // K slices, one CTA each, 1..8 (a cluster); skinny_gemm_splits() picks it
};

// Whether the kernel handles this product: float16/bfloat16, n and k multiples of 8, every
// pointer 16-byte aligned, sizes within int32.
bool skinny_gemm_supported(const SkinnyGemmArgs& args);

// K slices that put about one CTA on each of `sm_count` multiprocessors.
int skinny_gemm_splits(int64_t m, int64_t n, int64_t k, int sm_count);

cudaError_t launch_skinny_gemm(const SkinnyGemmArgs& args, cudaStream_t stream);

}  // namespace ingot::cuda
