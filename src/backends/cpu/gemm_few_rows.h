// Products of a few rows against pre-packed float32 weights: Y[M, N] = act(A[M, K] · W + bias)
// for M ≤ kFewRowsMax (a transformer at batch 1 and a short sequence, a classifier's last
// layer after gather_rows_early).
//
// Why not oneDNN: at these M the product streams W from memory once and does little arithmetic
// per byte, and oneDNN 2.6's brgemm matmul reads its packed weights at 13–16 GB/s on 2 cores of
// the development VM where a read loop reaches 20–25 GB/s: it computes a panel in two passes
// per 12 rows, and during the second (from cache) nothing streams. This kernel keeps a row
// block's products of a 32-column panel in registers (up to 12 rows × 32 columns = 24
// accumulators) and walks the panel once, front to back, prefetching 8 KB ahead, so each
// thread reads one contiguous stream: 0.71–0.79× oneDNN's time at M = 12 on DistilBERT's
// shapes (K×N 768×2304 … 3072×768, weights cold, alternating runs). Walking oneDNN's preferred
// 64-column panels instead (chunks of rows in L1, each block's pass prefetching the next chunk;
// or a thread per half panel) reached only 0.92–1.17×, hence the shared 32-column layout
// (fused_matmul::constant_weights_layout says what that costs oneDNN).
//
// Layout (fused_matmul::panel_layout, oneDNN's BA16a32b): W[K, N] as panels of 32 columns,
// panel p holding columns 32p … 32p+31 as Kp rows of 32 floats (Kp = K rounded up to 16; N
// rounded up to 32; padding is zero).
#pragma once

#include <cstdint>

#include "backends/cpu/fused_matmul_util.h"
#include "backends/cpu/fused_norm_util.h"

namespace ingot::cpu {

// Rows up to which gemm_few_rows is used (measured at DistilBERT's shapes: 0.82–0.90× oneDNN's
// time at M = 16–32 on the same layout, about equal at 48).
constexpr int64_t kFewRowsMax = 32;

// y[0, n) = act(y[0, n)): plain loops over the branch-free forms, inlined into each kernel so the
// compiler vectorises them for that kernel's target (AVX-512F or AVX2).
__attribute__((always_inline)) inline void activate_row(float* y, int64_t n, fused_matmul::Activation act) {
  using fused_matmul::Activation;
  switch (act) {
    case Activation::kNone: break;
    case Activation::kRelu:
      for (int64_t j = 0; j < n; ++j) y[j] = y[j] > 0.f ? y[j] : 0.f;
      break;
    case Activation::kGelu:
      for (int64_t j = 0; j < n; ++j) y[j] = fused::gelu_erf(y[j]);
      break;
    case Activation::kGeluTanh:
      for (int64_t j = 0; j < n; ++j) y[j] = fused::gelu_tanh(y[j]);
      break;
  }
}

// Whether this CPU runs gemm_few_rows (it needs AVX-512F).
bool few_rows_supported();

// Y[M, N] (row-major, leading dimension N) = act(A[M, K] (row-major, leading dimension K) · W
// + bias); W in fused_matmul::panel_layout(K, N); bias null or N floats. Threads over the panels.
void gemm_few_rows(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias,
                   fused_matmul::Activation act, float* Y);

// bfloat16: the same product with W in oneDNN's bf16 layout (fused_matmul::bf16_panel_layout,
// which its AMX and AVX512-BF16 matmuls both prefer) and A rounded to bfloat16, float32
// accumulation and output.
//   - On the AMX tile unit: a 16-row A tile and four 16-column C tiles per 64-column panel, one
//     K block of 32 at a time, prefetching 8 KB ahead. oneDNN's AMX matmul reads the weights
//     at 12–13 GB/s at these M; this kernel at 16–19 GB/s: 0.67–0.78× its time at M = 1…16 on
//     DistilBERT's shapes, with identical results (same products, same float32 accumulation
//     order per tile).
//   - Without AMX, with AVX512-BF16 dot products (vdpbf16ps; where bf16 arithmetic pays
//     without AMX: AMD Zen 4 and later, bf16_products.h): 6-row blocks of the panel in
//     registers, K in 8 KB chunks that the later row blocks re-read from L1.
constexpr int64_t kFewRowsMaxBf16 = 16;  // rows of one A tile

// The same product on bfloat16 weights in fused_matmul::bf16_narrow_panel_layout, widened to
// float32 as they are read (exact): half the bytes to stream, float32 arithmetic. For bf16
// engines on CPUs where bf16 arithmetic does not pay (bf16_products.h), M ≤ kFewRowsMax.
void gemm_few_rows_w16(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                       fused_matmul::Activation act, float* Y);

// Whether gemm_few_rows_bf16 runs here: on AMX (the OS grants the tile state) or on AVX512-BF16.
bool few_rows_bf16_supported();
bool few_rows_bf16_on_amx();
bool few_rows_bf16_on_avx512();

// On AMX where the process may use it, else on AVX512-BF16.
void gemm_few_rows_bf16(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                        fused_matmul::Activation act, float* Y);
// The AVX512-BF16 kernel alone (few_rows_bf16_on_avx512()), also where AMX would be used.
void gemm_few_rows_bf16_avx512(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                               fused_matmul::Activation act, float* Y);

// Whether FusedMatMul and the attention projections run gemm_panel16 here: AVX2 and FMA without
// AVX-512F (with AVX-512F the weights are packed in panels for gemm_few_rows and oneDNN), where
// constant float32 weights are packed in fused_matmul::panel16_layout.
bool panel16_supported();

// Y[M, N] = act(A[M, K] · W + bias) for every M, W in fused_matmul::panel16_layout(K, N)
// (gemm_panel16.cc says why not oneDNN). Threads over the panels.
void gemm_panel16(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias,
                  fused_matmul::Activation act, float* Y);

// Whether one of the kernels above computes M rows against weights packed in `layout` (this
// CPU runs it, M is within its limit (gemm_panel16 has none), the layout is the one it reads):
// the test every caller holding packed weights makes before gemm_packed.
bool packed_kernel_reads(const dnnl::memory::desc& layout, int64_t M);

// Y = act(A · W + bias) on the kernel for `packed`'s layout and data type
// (packed_kernel_reads said yes); K and N are its dims.
void gemm_packed(const dnnl::memory& packed, const float* A, int64_t M, const float* bias, fused_matmul::Activation act,
                 float* Y);

}  // namespace ingot::cpu
