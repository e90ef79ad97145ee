// gemm_panel16: float32 products of any number of rows on weights packed in 16-column panels, for
// CPUs with AVX2 and FMA but no AVX-512 (the AMD EPYC development VMs, Zen 3).
//
// There oneDNN 2.6's AVX2 matmul (gemm:jit) reads only plain layouts and packs them again on
// every call: at DistilBERT's M = 128 products it ran at 105-113 GFLOP/s on row-major weights
// and 122-126 on transposed ones, on two cores whose FMA units allow ~160 at their base clock
// (developer session 42). Here the weights are packed once, in prepare(), as oneDNN's BA16a16b
// (panel p: columns 16p .. 16p+15 as Kp rows of 16 floats, Kp = K rounded up to 16, zero
// padding), A is packed per call in blocks of 6 rows (k after k, 6 floats each), and a 6 x 16
// tile of products stays in 12 registers down K (2 loads and 6 broadcasts for 12 FMAs a step):
// 149-158 GFLOP/s at those shapes in the same probe, and 150-159 at M = 12 where oneDNN managed
// 92. The threads split the panels. Bias and activation are applied as each tile is stored.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/gemm_few_rows.h"
#include "runtime/parallel.h"

namespace ingot::cpu {
namespace {

using fused_matmul::Activation;

constexpr int kRows = 6, kCols = 16;
// K steps a tile accumulates before it is stored and reloaded: 768 (a panel's 48 KB of them
// from L2) measured best at K = 768 and K = 3072 against 256 and 512.
constexpr int64_t kKBlock = 768;

// C[R x 16] (row pitch ldc) = (first ? bias16 or 0 : C) + Ap · B over kc steps; Ap: kc steps of 6
// floats, B: kc rows of 16.
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(const float* Ap, const float* B, int64_t kc,
                                                                    float* C, int64_t ldc, bool first,
                                                                    const float* bias16) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) {
    if (!first) {
      acc[r][0] = _mm256_loadu_ps(C + r * ldc);
      acc[r][1] = _mm256_loadu_ps(C + r * ldc + 8);
    } else if (bias16) {
      acc[r][0] = _mm256_loadu_ps(bias16);
      acc[r][1] = _mm256_loadu_ps(bias16 + 8);
    } else {
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * kCols), b1 = _mm256_loadu_ps(B + k * kCols + 8);
    _mm_prefetch(reinterpret_cast<const char*>(B + k * kCols + 256), _MM_HINT_T0);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(Ap + k * kRows + r);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(C + r * ldc, acc[r][0]);
    _mm256_storeu_ps(C + r * ldc + 8, acc[r][1]);
  }
}

__attribute__((target("avx2,fma"))) void tile_rows(int rows, const float* Ap, const float* B, int64_t kc, float* C,
                                                   int64_t ldc, bool first, const float* bias16) {
  switch (rows) {
    case 6: tile<6>(Ap, B, kc, C, ldc, first, bias16); break;
    case 5: tile<5>(Ap, B, kc, C, ldc, first, bias16); break;
    case 4: tile<4>(Ap, B, kc, C, ldc, first, bias16); break;
    case 3: tile<3>(Ap, B, kc, C, ldc, first, bias16); break;
    case 2: tile<2>(Ap, B, kc, C, ldc, first, bias16); break;
    default: tile<1>(Ap, B, kc, C, ldc, first, bias16); break;
  }
}

// Panels [p0, p1) of Y for every row block: the tiles of a panel go to Y directly, except the
// last panel's when N is not a multiple of 16 (through a tile of its own, its bias padded).
__attribute__((target("avx2,fma"))) void panels(const float* Apk, int64_t M, int64_t K, int64_t N, const float* W,
                                                const float* bias, Activation act, float* Y, int64_t p0, int64_t p1) {
  const int64_t Kp = (K + 15) / 16 * 16, blocks = (M + kRows - 1) / kRows;
  alignas(32) float edge[kRows * kCols];
  alignas(32) float edge_bias[kCols];
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kCols, cols = std::min<int64_t>(kCols, N - n0);
    const float* B = W + p * Kp * kCols;
    const float* bias16 = bias ? bias + n0 : nullptr;
    if (bias && cols < kCols) {
      std::fill(edge_bias, edge_bias + kCols, 0.f);
      std::copy(bias + n0, bias + n0 + cols, edge_bias);
      bias16 = edge_bias;
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int rows = int(std::min<int64_t>(kRows, M - b * kRows));
      float* C = cols < kCols ? edge : Y + b * kRows * N + n0;
      const int64_t ldc = cols < kCols ? kCols : N;
      int64_t k0 = 0;
      do {  // at least once: K = 0 leaves the bias (or zeros)
        tile_rows(rows, Apk + (b * K + k0) * kRows, B + k0 * kCols, std::min(kKBlock, K - k0), C, ldc, k0 == 0,
                  bias16);
        k0 += kKBlock;
      } while (k0 < K);
      for (int r = 0; r < rows; ++r) {
        float* y = Y + (b * kRows + r) * N + n0;
        if (cols < kCols) std::copy(edge + r * kCols, edge + r * kCols + cols, y);
        activate_row(y, cols, act);
      }
    }
  }
}

}  // namespace

bool panel16_supported() {
  static const bool usable =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !__builtin_cpu_supports("avx512f");
  return usable;
}

void gemm_panel16(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias, Activation act,
                  float* Y) {
  if (M <= 0 || N <= 0) return;
  // A in blocks of 6 rows, k after k (rows past M zero): the calling thread's buffer, reused.
  const int64_t blocks = (M + kRows - 1) / kRows;
  thread_local std::vector<float> packed;
  if (packed.size() < size_t(blocks * K * kRows)) packed.resize(size_t(blocks * K * kRows));
  float* Apk = packed.data();
  parallel_for(blocks, K * kRows, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = b * kRows + r;
        float* dst = Apk + b * K * kRows + r;
        if (i < M) {
          const float* a = A + i * K;
          for (int64_t k = 0; k < K; ++k) dst[k * kRows] = a[k];
        } else {
          for (int64_t k = 0; k < K; ++k) dst[k * kRows] = 0.f;
        }
      }
  });
  const int64_t P = (N + kCols - 1) / kCols;
  parallel_for(P, 2 * M * K, [&](int64_t p0, int64_t p1) { panels(Apk, M, K, N, W, bias, act, Y, p0, p1); });
}

}  // namespace ingot::cpu
