// Launchers of the small kernels around the cuBLASLt products of MatMul, Gemm and
// ingot.FusedMatMul (device code in gemm.cu). Float32, float16 or bfloat16 storage; all
// arithmetic in float. They return the launch's error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

// y[i, j] = scale · c[i·row_stride + j·col_stride] for i < rows, j < cols (y dense [rows, cols]);
// a stride of 0 broadcasts C along that axis. Gemm's C input before the product adds beta·Y.
cudaError_t launch_broadcast_matrix(const void* c, int64_t row_stride, int64_t col_stride, float scale, void* y,
                                    int64_t rows, int64_t cols, DType dtype, cudaStream_t stream);

// Activations applied in place: after a product whose epilogue cannot compute them exactly
// (GELU), or on a broadcast bias when the product is empty (K = 0).
enum class PointwiseActivation { kRelu, kGeluErf, kGeluTanh, kTanh };

// y[i] = act(y[i]) for i < n.
cudaError_t launch_activation_inplace(void* y, int64_t n, PointwiseActivation act, DType dtype, cudaStream_t stream);

// How a product too wide for its output's rows (a padded width, or a half-precision product
// widened to float32) goes through scratch: blocks of `rows` x `cols` (cols a multiple of 8, the
// scratch pitch), within `budget_bytes` of elements `elem_bytes` wide. Every row and as many
// columns as fit where 8 columns of every row fit, so that each slice of W is read once and
// the block stays in L2 for the pass that copies it out; rows in steps otherwise.
struct ScratchBlocks {
  int64_t rows = 0, cols = 0;
};
ScratchBlocks scratch_blocks(int64_t m, int64_t width, int64_t elem_bytes, int64_t budget_bytes);

// y[i, j] = src[i·src_pitch + j] for i < rows, j < cols (y [rows, cols], rows y_pitch apart), in
// y_dtype: float32 (a float16/bfloat16 product widened on its way out of the scratch it was
// computed in: FusedMatMul with output_dtype float32) or src_dtype (a copy), dropping the padding
// columns of a padded product. src: float16, bfloat16 or float32, 16-byte aligned, src_pitch a
// multiple of 16 bytes (0: every row of y from the same source row), else cudaErrorInvalidValue.
// Loads may read up to 15 bytes past a row's `cols`, within its pitch (or, at pitch 0, the row
// rounded up to 16 bytes).
cudaError_t launch_copy_rows(const void* src, int64_t src_pitch, DType src_dtype, void* y, DType y_dtype,
                             int64_t y_pitch, int64_t rows, int64_t cols, cudaStream_t stream);

// Widest product launch_skinny_product takes.
constexpr int64_t kSkinnyMaxN = 8;

// y[i, n] = act(sum_k a[i, k] · w[k, n] + bias[n]) for i < rows, n < N ≤ kSkinnyMaxN: a, w, bias
// (optional) dense in `dtype`, y in it or float32 (float_output); fp32 accumulation and activation
// (has_act: act applied, exact GELU for kGeluErf). With has_input_act each element of a is first
// replaced by input_act(a) rounded to `dtype`, what an in-place activation pass over a would have
// stored (ClassifierHead: the pooler's tanh without a launch of its own). gemm_skinny.cu:
// FusedMatMul's classifier heads.
cudaError_t launch_skinny_product(const void* a, const void* w, const void* bias, void* y, int64_t rows, int64_t K,
                                  int64_t N, DType dtype, bool float_output, bool has_act, PointwiseActivation act,
                                  cudaStream_t stream, bool has_input_act = false,
                                  PointwiseActivation input_act = PointwiseActivation::kRelu);

}  // namespace ingot::cuda
