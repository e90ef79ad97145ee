// Products of at most 128 rows on a kernel of ingot's own (gemm_split_k.cu), which lt_gemm takes
// in place of cuBLASLt where it fits when INGOT_CUDA_OWN_GEMM=1 (the overlap below comes with
// dependent launch, on by default in small graphs) on a device of compute capability 9.0 (wgmma,
// sm_90a code alone): a transformer's layer products at batch 1 (128 tokens). Off by default: it
// is slower than cuBLASLt so far.
//
// Why: at batch 1 a layer is seven kernels of 2-6 us, and the boundaries between them are much
// of the run. This kernel is launched with programmatic dependent launch
// (cuda_dependent_launch.h): its CTAs start while the kernel before is finishing, copy their
// share of the weights into shared memory before waiting for it, and let the kernel after them
// start early in turn. cuBLASLt's kernels wait for nothing of the kind, so they cannot take part
// (edges into them made programmatic gave BERT-base b1 60 us and wrong outputs: their loads ran
// early). So the overlap is there to win only with products of ingot's own that are about as
// fast as cuBLASLt's.
//
// One CTA computes a 128 x 64 tile of D over a K/S slice; the S CTAs of a column tile form a
// thread-block cluster and add their fp32 partial tiles through distributed shared memory in a
// fixed order (deterministic), each finishing 1/S of the tile with the epilogue.
//
// Where it stands (H100, developer session 18, with INGOT_CUDA_PDL=1): BERT-base b1 0.422-0.426
// ms against 0.402-0.410 with cuBLASLt's products, DistilBERT b1 0.216-0.217 against
// 0.205-0.207; without dependent launch the own products cost 40 us more at BERT-base b1, so
// the overlap works once the products are ingot's own. Left: about 0.5 us a product, at least
// part of it the K split's cluster reduction (clusters of 8 were 20 us slower than of 4), and
// FFN 2's 3072-deep product, which no K slice of 384 covers in four. Session 23 (H100): timed
// alone as lt_gemm's autotune times cuBLASLt's candidates (L2 cleared, mean of five), BERT-base
// b1's QKV 10.5-10.7 us against cuBLASLt's best 8.3-8.6, FFN 1 12.3-12.4 against 9.2-9.5, the
// out-projection 9.8-10.1 against 7.6-7.9; in bench/layer_chain_bench 32.1-32.2 us a layer against
// 28.9-30.1. Sharing A between two column tiles by TMA multicast (clusters S x 2) and tiles of two
// 64-column W panels (2 x W through L2 instead of 3 x W) were each slower still (33.3-34.1 us).
// Session 26: offered to the graph tuning as one more candidate per product (clusters of up to
// 8, FFN 2 included), it was 0.7-2.5 us a product slower than cuBLASLt's best inside BERT-base
// b1's graph and chosen nowhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/gemm_impl.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

constexpr int64_t kOwnProductMaxRows = 128;

// D[m, n] = act(A[m, :] · W[:, n] + bias[n] + beta · C[m, n]) for m < rows, n < cols, all
// row-major float16/bfloat16 with fp32 accumulation; beta 0 or 1 (C then read, it may be D).
struct SplitKProduct {
  const void* a = nullptr;
  int64_t lda = 0;
  const void* w = nullptr;
  int64_t ldw = 0;
  const void* bias = nullptr;  // [cols] or null
  const void* c = nullptr;     // read when beta is 1
  int64_t ldc = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  int64_t rows = 0, cols = 0, depth = 0;
  float beta = 0.f;
  DType dtype = DType::kFloat16;
  bool has_act = false;  // act applied after bias and C
  PointwiseActivation act = PointwiseActivation::kRelu;
};

// The K split S (at most 4) the kernel would take the product with (clusters of S CTAs, at most
// one CTA per multiprocessor), or 0 when it does not take it: rows beyond 128, columns not a
// multiple of 64, a K slice that is not a multiple of 16 or beyond 384, or another dtype, beta,
// alignment.
int split_k_plan(const SplitKProduct& p, int sm_count);

// Enqueues the product with the K split split_k_plan gave it (nonzero); returns the launch's
// error.
cudaError_t launch_split_k_product(const SplitKProduct& p, int split, cudaStream_t stream);

// Whether lt_gemm routes the products the kernel takes to it: only with INGOT_CUDA_OWN_GEMM=1
// (slower than cuBLASLt so far: see the top of this file).
bool split_k_product_enabled();

}  // namespace ingot::cuda
