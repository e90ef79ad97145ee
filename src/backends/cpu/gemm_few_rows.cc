// gemm_few_rows: see the header for why and the layout.
#include "backends/cpu/gemm_few_rows.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <utility>

#include "backends/cpu/dnnl_util.h"
#include "ingot/dtype.h"
#include "runtime/parallel.h"

namespace ingot::cpu {
namespace {

using fused_matmul::Activation;

constexpr int64_t kPanel = 32;            // columns per panel: 2 vectors of 16 floats
constexpr int kRowBlock = 12;             // rows per pass: 12 x 2 accumulators of the 32 registers
constexpr int64_t kPrefetchBytes = 8192;  // how far ahead of the panel row in use the prefetches run

struct Tile {
  const float* a;     // the block's first row of A
  int64_t K;          // A's leading dimension and the panel rows used
  const void* w;      // the panel (float32, or bfloat16 for gemm_few_rows_w16)
  const float* bias;  // null, or the bias of the panel's first column
  float* y;           // the block's first row, at the panel's first column
  int64_t ldy;
  int ncols;          // 1..32 valid columns
  Activation act;
};

// The activation over a stored tile.
__attribute__((target("avx512f"))) void activate(float* y, int64_t ldy, int rows, int ncols, Activation act) {
  for (int m = 0; m < rows; ++m) activate_row(y + m * ldy, ncols, act);
}

// Rows of a finished tile (leading dimension ldc) to Y: bias, activation, the valid columns.
__attribute__((target("avx512f"))) void store_rows(float* c, int64_t ldc, int64_t rows, int ncols, const float* bias,
                                                   Activation act, float* y, int64_t ldy) {
  if (bias)
    for (int64_t m = 0; m < rows; ++m)
      for (int j = 0; j < ncols; ++j) c[m * ldc + j] += bias[j];
  activate(c, ldc, int(rows), ncols, act);
  for (int64_t m = 0; m < rows; ++m) std::copy_n(c + m * ldc, ncols, y + m * ldy);
}

// One panel row's 32 weights as two vectors of 16 floats: float32, columns 0-15 and 16-31;
// bfloat16 (float32's upper half, so widening is exact), the even columns and the odd ones: a
// 32-bit lane holds columns 2j (low half) and 2j + 1 (high half), which a shift and a mask
// widen in two operations (a zero extension per half would take four).
__attribute__((target("avx512f"))) inline void load_row(const float* wk, __m512& w0, __m512& w1) {
  w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16);
}
__attribute__((target("avx512f"))) inline void load_row(const uint16_t* wk, __m512& w0, __m512& w1) {
  const __m512i v = _mm512_loadu_si512(wk);
  w0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  w1 = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int(0xffff0000u))));
}

template <class WT, int MT>
__attribute__((target("avx512f"), noinline)) void tile(const Tile& t) {
  __m512 c0[MT], c1[MT];
  for (int m = 0; m < MT; ++m) c0[m] = _mm512_setzero_ps(), c1[m] = _mm512_setzero_ps();
  const WT* w = static_cast<const WT*>(t.w);
  for (int64_t k = 0; k < t.K; ++k) {
    const WT* wk = w + k * kPanel;
    // Past the panel's end this touches the next panel (or nothing: prefetches never fault).
    const char* ahead = reinterpret_cast<const char*>(wk) + kPrefetchBytes;
    _mm_prefetch(ahead, _MM_HINT_T0);
    if constexpr (sizeof(WT) == 4) _mm_prefetch(ahead + 64, _MM_HINT_T0);
    __m512 w0, w1;
    load_row(wk, w0, w1);
#pragma GCC unroll 12
    for (int m = 0; m < MT; ++m) {
      const __m512 x = _mm512_set1_ps(t.a[m * t.K + k]);
      c0[m] = _mm512_fmadd_ps(x, w0, c0[m]);
      c1[m] = _mm512_fmadd_ps(x, w1, c1[m]);
    }
  }
  if constexpr (sizeof(WT) == 2) {  // even/odd columns back to 0-15 / 16-31
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int m = 0; m < MT; ++m) {
      const __m512 e = c0[m], o = c1[m];
      c0[m] = _mm512_permutex2var_ps(e, lo, o), c1[m] = _mm512_permutex2var_ps(e, hi, o);
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

template <class WT, int... I>
constexpr std::array<void (*)(const Tile&), sizeof...(I)> tiles(std::integer_sequence<int, I...>) {
  return {&tile<WT, I + 1>...};
}

// Threads over contiguous ranges of panels (each thread's weights are one stream), row blocks
// of kRowBlock within each panel.
template <class WT>
void few_rows(const float* A, int64_t M, int64_t K, int64_t N, const WT* W, const float* bias, Activation act,
              float* Y) {
  static constexpr auto kTiles = tiles<WT>(std::make_integer_sequence<int, kRowBlock>{});
  const int64_t panels = (N + kPanel - 1) / kPanel;
  const int64_t Kp = (K + 15) / 16 * 16;
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

// ---- bfloat16 on the AMX tile unit ----

constexpr int64_t kBfPanel = 64;        // columns per panel of oneDNN's BA16a64b2a
constexpr int64_t kBfKBlock = 32;       // K per tile product: 16 rows of k pairs
constexpr int64_t kBfBlockElems = kBfKBlock * kBfPanel;  // 4 KB of bf16 per panel K block
constexpr int64_t kBfPrefetchBlocks = 2;                 // K blocks prefetched ahead: 8 KB

// The 64-byte tile configuration (palette 1). Tile 0: A (M rows of 32 bf16); tiles 1-4: the
// panel's four 16-column slices of C (M rows of 16 floats); tiles 5-7: B (16 rows of 16
// column pairs), loaded in rotation.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile"))) void tiles_configure(int M) {
  TileConfig c;
  for (int t = 0; t <= 7; ++t) c.colsb[t] = 64, c.rows[t] = uint8_t(t >= 5 ? 16 : M);
  // GCC 12's _tile_loadconfig does not tell the compiler it reads memory, which then drops the
  // stores above: make them happen first.
  __asm__ volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}

__attribute__((target("amx-tile"))) void tiles_release() { _tile_release(); }

// One panel: C[M, 64] = A[M, Kp] · W_panel, into `c` (M rows of 64 floats).
__attribute__((target("amx-tile,amx-bf16"), noinline)) void bf16_panel(const uint16_t* a, int64_t Kp,
                                                                       const uint16_t* panel, const uint16_t* end,
                                                                       float* c) {
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  for (int64_t kb = 0; kb < Kp / kBfKBlock; ++kb) {
    const uint16_t* w = panel + kb * kBfBlockElems;
    const uint16_t* ahead = w + kBfPrefetchBlocks * kBfBlockElems;
    if (ahead < end)
      for (int line = 0; line < 64; ++line) _mm_prefetch(reinterpret_cast<const char*>(ahead) + 64 * line, _MM_HINT_T0);
    _tile_loadd(0, a + kb * kBfKBlock, Kp * 2);
    _tile_loadd(5, w, kBfPanel * 4);
    _tile_dpbf16ps(1, 0, 5);
    _tile_loadd(6, w + 32, kBfPanel * 4);
    _tile_dpbf16ps(2, 0, 6);
    _tile_loadd(7, w + 64, kBfPanel * 4);
    _tile_dpbf16ps(3, 0, 7);
    _tile_loadd(5, w + 96, kBfPanel * 4);
    _tile_dpbf16ps(4, 0, 5);
  }
  _tile_stored(1, c, kBfPanel * 4);
  _tile_stored(2, c + 16, kBfPanel * 4);
  _tile_stored(3, c + 32, kBfPanel * 4);
  _tile_stored(4, c + 48, kBfPanel * 4);
}

// ---- bfloat16 dot products (AVX512-BF16, where AMX is absent) ----
// The same panels (BA16a64b2a: a k-pair row is 64 column pairs, four vectors of 16), one
// vdpbf16ps per row and vector: acc += a[2r] * w[2r] + a[2r+1] * w[2r+1] in float32. Rows in
// blocks of kDpRowBlock (4 accumulators each), K in chunks of kDpChunkPairs k-pair rows: the
// first row block reads a chunk from memory, the later ones re-read it from L1, and the
// partial sums wait in the panel's C tile between chunks. Every row block's pass prefetches
// its share of the next chunk, so the stream from memory does not pause while later blocks
// compute.
constexpr int kDpRowBlock = 6;         // 6 rows x 4 accumulators + 4 weight vectors of the 32 registers
constexpr int64_t kDpChunkPairs = 32;  // 8 KB of the panel per chunk

template <int MT>
__attribute__((target("avx512f,avx512bf16"), noinline)) void dp_block(const uint32_t* a, int64_t lda, const uint16_t* w,
                                                                      int64_t pairs, float* c, bool zero,
                                                                      const char* ahead, int ahead_lines) {
  __m512 acc[MT][4];
  for (int m = 0; m < MT; ++m)
    for (int j = 0; j < 4; ++j) acc[m][j] = zero ? _mm512_setzero_ps() : _mm512_load_ps(c + m * kBfPanel + 16 * j);
  for (int64_t r = 0; r < pairs; ++r) {
    const uint16_t* wr = w + r * 2 * kBfPanel;
    for (int line = 0; line < ahead_lines; ++line) _mm_prefetch(ahead + 64 * (r * ahead_lines + line), _MM_HINT_T0);
    __m512bh wv[4];
    for (int j = 0; j < 4; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(wr + 32 * j);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(int(a[m * lda + r]));
      for (int j = 0; j < 4; ++j) acc[m][j] = _mm512_dpbf16_ps(acc[m][j], x, wv[j]);
    }
  }
  for (int m = 0; m < MT; ++m)
    for (int j = 0; j < 4; ++j) _mm512_store_ps(c + m * kBfPanel + 16 * j, acc[m][j]);
}

template <int... I>
constexpr std::array<void (*)(const uint32_t*, int64_t, const uint16_t*, int64_t, float*, bool, const char*, int),
                     sizeof...(I)>
dp_blocks(std::integer_sequence<int, I...>) {
  return {&dp_block<I + 1>...};
}

// One panel: C[M, 64] = A[M, Kp] · W_panel, A as M rows of Kp / 2 bf16 pairs.
void bf16_panel_dp(const uint32_t* a, int64_t M, int64_t Kp, const uint16_t* panel, float* c) {
  static constexpr auto kBlocks = dp_blocks(std::make_integer_sequence<int, kDpRowBlock>{});
  const int64_t pairs = Kp / 2;
  const int64_t blocks = (M + kDpRowBlock - 1) / kDpRowBlock;
  const int lines = int((4 + blocks - 1) / blocks);  // of the next chunk's 4 lines a pair row, per block pass
  for (int64_t r0 = 0; r0 < pairs; r0 += kDpChunkPairs) {
    const int64_t n = std::min(kDpChunkPairs, pairs - r0);
    const uint16_t* chunk = panel + r0 * 2 * kBfPanel;
    // Past the panel's end this touches the next panel (or nothing: prefetches never fault).
    const char* next = reinterpret_cast<const char*>(chunk + kDpChunkPairs * 2 * kBfPanel);
    for (int64_t b = 0; b < blocks; ++b)
      kBlocks[size_t(std::min<int64_t>(kDpRowBlock, M - b * kDpRowBlock) - 1)](
          a + b * kDpRowBlock * pairs + r0, pairs, chunk, n, c + b * kDpRowBlock * kBfPanel, r0 == 0,
          next + 64 * lines * b * n, lines);
  }
}

bool amx_bf16_usable() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = d & (1u << 24), bf16 = d & (1u << 22);
  // Linux hands out the tile state only on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
  return tile && bf16 && syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

// A in bfloat16 (rounded as oneDNN rounds), K padded with zeros to Kp (W's padding rows are zero
// too), in the thread's source buffer.
const uint16_t* a_in_bf16(const float* A, int64_t M, int64_t K, int64_t Kp) {
  uint16_t* a = static_cast<uint16_t*>(dnnl_util::thread_buffers().src.get(size_t(M * Kp) * 2));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) a[m * Kp + k] = bfloat16::from_float(A[m * K + k]);
    std::fill(a + m * Kp + K, a + (m + 1) * Kp, uint16_t(0));
  }
  return a;
}

int64_t bf16_padded_k(int64_t K) { return (K + kBfKBlock - 1) / kBfKBlock * kBfKBlock; }

// Y = act(A · W + bias) over W's 64-column bf16 panels, threads over contiguous ranges of
// panels: `panel(a, Kp, w, c)` computes one panel's C[M, 64] into c from A in bfloat16 (a, rows
// of Kp); `amx_tiles`: each thread configures the tile unit for M rows first and releases it
// after.
template <class Panel>
void bf16_panels(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias, Activation act,
                 float* Y, bool amx_tiles, Panel panel) {
  const int64_t Kp = bf16_padded_k(K);
  const int64_t panels = (N + kBfPanel - 1) / kBfPanel;
  const uint16_t* a = a_in_bf16(A, M, K, Kp);
  parallel_for(panels, M * K * kBfPanel / 8, [&](int64_t begin, int64_t stop) {
    alignas(64) float c[kFewRowsMaxBf16 * kBfPanel];
    if (amx_tiles) tiles_configure(int(M));
    for (int64_t p = begin; p < stop; ++p) {
      panel(a, Kp, W + p * Kp * kBfPanel, c);
      store_rows(c, kBfPanel, M, int(std::min(kBfPanel, N - p * kBfPanel)), bias ? bias + p * kBfPanel : nullptr, act,
                 Y + p * kBfPanel, N);
    }
    if (amx_tiles) tiles_release();
  });
}

}  // namespace

bool few_rows_supported() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512;
}

void gemm_few_rows(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias,
                   Activation act, float* Y) {
  few_rows(A, M, K, N, W, bias, act, Y);
}

void gemm_few_rows_w16(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                       Activation act, float* Y) {
  few_rows(A, M, K, N, W, bias, act, Y);
}

bool few_rows_bf16_supported() { return few_rows_bf16_on_amx() || few_rows_bf16_on_avx512(); }

bool few_rows_bf16_on_amx() {
  static const bool usable = amx_bf16_usable();
  return usable;
}

bool few_rows_bf16_on_avx512() {
  static const bool usable = __builtin_cpu_supports("avx512bf16");
  return usable;
}

void gemm_few_rows_bf16(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                        Activation act, float* Y) {
  if (!few_rows_bf16_on_amx()) return gemm_few_rows_bf16_avx512(A, M, K, N, W, bias, act, Y);
  const uint16_t* end = W + (N + kBfPanel - 1) / kBfPanel * bf16_padded_k(K) * kBfPanel;
  bf16_panels(A, M, K, N, W, bias, act, Y, true, [&](const uint16_t* a, int64_t Kp, const uint16_t* w, float* c) {
    bf16_panel(a, Kp, w, end, c);
  });
}

void gemm_few_rows_bf16_avx512(const float* A, int64_t M, int64_t K, int64_t N, const uint16_t* W, const float* bias,
                               Activation act, float* Y) {
  bf16_panels(A, M, K, N, W, bias, act, Y, false, [&](const uint16_t* a, int64_t Kp, const uint16_t* w, float* c) {
    bf16_panel_dp(reinterpret_cast<const uint32_t*>(a), M, Kp, w, c);
  });
}

bool packed_kernel_reads(const dnnl::memory::desc& layout, int64_t M) {
  const dnnl::memory::dims& d = layout.dims();
  if (d.size() != 2) return false;
  if (layout == fused_matmul::panel16_layout(d[0], d[1])) return panel16_supported();
  if (layout == fused_matmul::bf16_narrow_panel_layout(d[0], d[1])) return M <= kFewRowsMax && few_rows_supported();
  if (layout.data_type() == dnnl::memory::data_type::bf16)
    return M <= kFewRowsMaxBf16 && few_rows_bf16_supported() && layout == fused_matmul::bf16_panel_layout(d[0], d[1]);
  return M <= kFewRowsMax && few_rows_supported() && layout == fused_matmul::panel_layout(d[0], d[1]);
}

void gemm_packed(const dnnl::memory& packed, const float* A, int64_t M, const float* bias, Activation act, float* Y) {
  const dnnl::memory::desc layout = packed.get_desc();
  const int64_t K = layout.dims()[0], N = layout.dims()[1];
  if (layout == fused_matmul::bf16_narrow_panel_layout(K, N))
    gemm_few_rows_w16(A, M, K, N, static_cast<const uint16_t*>(packed.get_data_handle()), bias, act, Y);
  else if (layout.data_type() == dnnl::memory::data_type::bf16)
    gemm_few_rows_bf16(A, M, K, N, static_cast<const uint16_t*>(packed.get_data_handle()), bias, act, Y);
  else if (layout == fused_matmul::panel16_layout(K, N))
    gemm_panel16(A, M, K, N, static_cast<const float*>(packed.get_data_handle()), bias, act, Y);
  else
    gemm_few_rows(A, M, K, N, static_cast<const float*>(packed.get_data_handle()), bias, act, Y);
}

}  // namespace ingot::cpu
