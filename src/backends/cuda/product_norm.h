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
};

// y = LayerNorm(A·W + bias + C) · gamma + beta for the plain row-major product d (W [K, N] dense,
// no batch, no transposes, no activation; C = d.c_in when beta is 1): the fused kernel
// (product_norm_impl.h) when the shape fits it, else lt_gemm into y and the LayerNorm kernel
// over y in place. Errors name `what`.
Status product_layer_norm(const CudaHandles& h, const GemmDesc& d, const void* a, const void* w, void* y,
                          const LayerNormArgs& norm, const char* what);

// The LayerNorm alone over y [rows, n] in place (after a product that could not take it).
Status layer_norm_in_place(const CudaHandles& h, DType dtype, void* y, int64_t rows, int64_t n,
                           const LayerNormArgs& norm, const char* what);

}  // namespace ingot::cuda
