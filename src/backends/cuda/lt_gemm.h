// Row-major matrix products through cuBLASLt, for every CUDA kernel that needs one
// (MatMul, Gemm, ingot.FusedMatMul, ingot.Attention's projections).
//
//   D[b] = act(alpha · op(A[b]) · op(B[b]) + beta · C[b] + bias)     for b < batch (D = C unless c_in)
//
// All matrices are row-major; op(X) is X or Xᵀ. A, B and C share one float dtype (float32,
// float16 or bfloat16); accumulation is float32 (TF32 tensor cores only when
// CudaHandles::allow_tf32). The bias has C's dtype and length n, and is added before the
// activation in the same kernel (a cuBLASLt epilogue). The algorithm for each shape is chosen
// once (cuBLASLt's heuristic) and cached, so a call is capturable into a CUDA graph.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace ingot::cuda {

enum class GemmActivation { kNone, kRelu, kGeluTanh };

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  // Element strides between consecutive matrices of a batch; 0 broadcasts one matrix to all.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // Leading dimensions (elements between rows, row-major); 0 means dense (the column count).
  int64_t lda = 0, ldb = 0, ldc = 0;
  DType dtype = DType::kFloat32;
  float alpha = 1.0f, beta = 0.0f;
  // The C that beta scales, when it is not the output itself (a residual added in the epilogue:
  // D = A·B + bias + C into another buffer); the output's layout, except that its leading
  // dimension is ldc_in when that is nonzero (rows picked out of a longer matrix: a
  // classifier token's residual read from the whole sequence). Null: C is the output.
  const void* c_in = nullptr;
  int64_t ldc_in = 0;
  const void* bias = nullptr;  // [n] or null
  GemmActivation activation = GemmActivation::kNone;
};

// Scratch cuBLASLt may use (the executor's shared workspace must be at least this large).
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

// Enqueues the product on handles.stream. Errors name the shape and dtype.
Status lt_gemm(const CudaHandles& handles, const GemmDesc& desc, const void* a, const void* b, void* c,
               void* workspace, size_t workspace_bytes);

}  // namespace ingot::cuda
