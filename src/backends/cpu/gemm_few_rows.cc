// gemm_few_rows: see the header for why and the layout.
#include "backends/cpu/gemm_few_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "backends/cpu/fused_norm_util.h"
#include "runtime/parallel.h"

namespace ingot::cpu {
namespace {

using fused_matmul::Activation;

constexpr int64_t kPanel = 32;         // columns per panel: 2 vectors of 16 floats
constexpr int kRowBlock = 12;          // rows per pass: 12 x 2 accumulators of the 32 registers
constexpr int64_t kPrefetchRows = 64;  // panel rows prefetched ahead: 64 x 128 B = 8 KB

struct Tile {
  const float* a;     // the block's first row of A
  int64_t K;          // A's leading dimension and the panel rows used
  const float* w;     // the panel
  const float* bias;  // null, or the bias of the panel's first column
  float* y;           // the block's first row, at the panel's first column
  int64_t ldy;
  int ncols;          // 1..32 valid columns
  Activation act;
};

// The activation over a stored tile: plain loops over the branch-free forms, which the
// compiler vectorises for this target.
__attribute__((target("avx512f"))) void activate(float* y, int64_t ldy, int rows, int ncols, Activation act) {
  for (int m = 0; m < rows; ++m) {
    float* r = y + m * ldy;
    switch (act) {
      case Activation::kNone: break;
      case Activation::kRelu:
        for (int j = 0; j < ncols; ++j) r[j] = r[j] > 0.f ? r[j] : 0.f;
        break;
      case Activation::kGelu:
        for (int j = 0; j < ncols; ++j) r[j] = fused::gelu_erf(r[j]);
        break;
      case Activation::kGeluTanh:
        for (int j = 0; j < ncols; ++j) r[j] = fused::gelu_tanh(r[j]);
        break;
    }
  }
}

template <int MT>
__attribute__((target("avx512f"), noinline)) void tile(const Tile& t) {
  __m512 c0[MT], c1[MT];
  for (int m = 0; m < MT; ++m) c0[m] = _mm512_setzero_ps(), c1[m] = _mm512_setzero_ps();
  for (int64_t k = 0; k < t.K; ++k) {
    const float* wk = t.w + k * kPanel;
    // Past the panel's end this touches the next panel (or nothing: prefetches never fault).
    const char* ahead = reinterpret_cast<const char*>(wk + kPrefetchRows * kPanel);
    _mm_prefetch(ahead, _MM_HINT_T0);
    _mm_prefetch(ahead + 64, _MM_HINT_T0);
    const __m512 w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16);
#pragma GCC unroll 12
    for (int m = 0; m < MT; ++m) {
      const __m512 x = _mm512_set1_ps(t.a[m * t.K + k]);
      c0[m] = _mm512_fmadd_ps(x, w0, c0[m]);
      c1[m] = _mm512_fmadd_ps(x, w1, c1[m]);
    }
  }
  const __mmask16 k0 = t.ncols >= 16 ? __mmask16(0xffff) : __mmask16((1u << t.ncols) - 1);
  const __mmask16 k1 = t.ncols >= 32   ? __mmask16(0xffff)
                       : t.ncols <= 16 ? __mmask16(0)
                                       : __mmask16((1u << (t.ncols - 16)) - 1);
  __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
  if (t.bias) b0 = _mm512_maskz_loadu_ps(k0, t.bias), b1 = _mm512_maskz_loadu_ps(k1, t.bias + 16);
  for (int m = 0; m < MT; ++m) {
    _mm512_mask_storeu_ps(t.y + m * t.ldy, k0, _mm512_add_ps(c0[m], b0));
    _mm512_mask_storeu_ps(t.y + m * t.ldy + 16, k1, _mm512_add_ps(c1[m], b1));
  }
  if (t.act != Activation::kNone) activate(t.y, t.ldy, MT, t.ncols, t.act);
}

template <int... I>
constexpr std::array<void (*)(const Tile&), sizeof...(I)> tiles(std::integer_sequence<int, I...>) {
  return {&tile<I + 1>...};
}
constexpr auto kTiles = tiles(std::make_integer_sequence<int, kRowBlock>{});

}  // namespace

bool few_rows_supported() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512;
}

void gemm_few_rows(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias,
                   Activation act, float* Y) {
  const int64_t panels = (N + kPanel - 1) / kPanel;
  const int64_t Kp = (K + 15) / 16 * 16;
  // Contiguous ranges of panels per thread: each thread's weights are one stream.
  parallel_for(panels, M * K * kPanel, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int ncols = int(std::min<int64_t>(kPanel, N - p * kPanel));
      for (int64_t m = 0; m < M; m += kRowBlock) {
        const int rows = int(std::min<int64_t>(kRowBlock, M - m));
        const Tile t{A + m * K, K, W + p * Kp * kPanel, bias ? bias + p * kPanel : nullptr, Y + m * N + p * kPanel,
                     N, ncols, act};
        kTiles[size_t(rows - 1)](t);
      }
    }
  });
}

}  // namespace ingot::cpu
