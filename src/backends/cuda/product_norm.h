// A product whose output a LayerNorm over the last axis normalises (ingot.FusedMatMul's inputs
// 4-5, ingot.Attention's 7-8: fold_layer_norm_into_product puts a product's LayerNorm there).
#pragma once

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/lt_gemm.h"

namespace ingot::cuda {

struct LayerNormArgs {
  const void* gamma = nullptr;  // [N], the product's dtype
  const void* beta = nullptr;   // [N] or null
  float epsilon = 1e-5f;
  // bias, gamma and beta are constants of the plan (never written while it runs): the kernels
  // may read them before they wait for the kernel before (cuda_dependent_launch.h).
  bool params_constant = false;
  // The next steps' weights, requested into L2 by the kernel (a FusedMatMul that normalises is
  // the kernel before the next layer's first product at batch 1: cuda_l2_prefetch.h).
  L2Prefetch prefetch;
  // Space for the partial products of a K split (product_norm_split_bytes), or null: no split.
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};

// A product of few rows that the fused kernel does not take and whose K is several times N (BERT's
// second FFN product at batch 1: 128 x 768 x 3072) is split over K into `parts` products of K /
// parts, one batched cuBLASLt call writing float32 partials, and the LayerNorm kernel sums them
// with the bias and the residual (rounded once, as the product's epilogue would) before it
// normalises. cuBLASLt split such products itself (its split-K kernel, 5.6 us in BERT-base b1's
// graph on an H200) with a kernel of its own adding the parts before the LayerNorm kernel could
// start; the batched product takes 4.7 us and one kernel boundary goes. H200, developer session
// 37, GPU compute median of 300 runs, ms, split / INGOT_CUDA_NORM_SPLIT=0: BERT-base b1 0.3340 /
// 0.3571, 0.3340 / 0.3572, 0.3322 / 0.3564; DistilBERT b1 0.1698 / 0.1812, 0.1691 / 0.1802,
// 0.1696 / 0.1803. Two parts were slower than four, six no faster.
// The parts for this product (0: no split); INGOT_CUDA_NORM_SPLIT=P sets them (0 turns the split
// off; an A/B switch).
int product_norm_split(DType dtype, int64_t m, int64_t n, int64_t k);
// The scratch that split needs (0 when there is none).
size_t product_norm_split_bytes(DType dtype, int64_t m, int64_t n, int64_t k);

// y = LayerNorm(A·W + bias + C) · gamma + beta for the plain row-major product d (W [K, N] dense,
// no batch, no transposes, no activation; C = d.c_in when beta is 1): the fused kernel
// (product_norm_impl.h) when the shape fits it, else the K split above when norm.scratch holds
// it, else lt_gemm into y and the LayerNorm kernel over y in place. Errors name `what`.
Status product_layer_norm(const CudaHandles& h, const GemmDesc& d, const void* a, const void* w, void* y,
                          const LayerNormArgs& norm, const char* what);

// The LayerNorm alone over y [rows, n] in place (after a product that could not take it).
Status layer_norm_in_place(const CudaHandles& h, DType dtype, void* y, int64_t rows, int64_t n,
                           const LayerNormArgs& norm, const char* what);

}  // namespace ingot::cuda
