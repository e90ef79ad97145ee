// Inner loops of the ingot.Attention kernel. No intrinsics: GCC vector extensions and plain
// `omp simd` loops, so one template (core_tasks<W>) compiles to AVX-512 (W = 16, from a caller
// with target("avx512f")) and to AVX2 (W = 8, the -march baseline).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#define INGOT_ATT_INLINE inline __attribute__((always_inline))

namespace ingot::attention_util {

// exp(x) for x <= 0 (softmax arguments after max subtraction), vectorisable: range reduction
// to 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial (relative error ~2e-7, well inside
// the 1e-4 the fused path must hold). Arguments below -87 give exactly 0, as std::exp(-inf)
// does; NaN stays NaN (the comparisons below are false for NaN).
INGOT_ATT_INLINE float exp_neg(float x) {
  const float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  bool tiny = x < -87.0f;
  float xc = tiny ? -87.0f : x;
  float n = std::floor(xc * kLog2e + 0.5f);
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return tiny ? 0.0f : p * scale;
}

// In-place softmax of s[0, n). With nan_to_zero, NaN probabilities become 0 (the exporters'
// Where(IsNaN(p), 0, p) after a softmax over a fully masked row).
INGOT_ATT_INLINE void softmax_row(float* s, int64_t n, bool nan_to_zero) {
  float mx = -std::numeric_limits<float>::infinity();
  int has_nan = 0;
#pragma omp simd reduction(max : mx) reduction(| : has_nan)
  for (int64_t j = 0; j < n; ++j) {
    mx = s[j] > mx ? s[j] : mx;
    has_nan |= s[j] != s[j];
  }
  if (has_nan || mx == -std::numeric_limits<float>::infinity()) {
    // NaN scores or every key at -inf: ONNX Softmax yields NaN for the whole row.
    float v = nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN();
    for (int64_t j = 0; j < n; ++j) s[j] = v;
    return;
  }
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    float e = exp_neg(s[j] - mx);
    s[j] = e;
    sum += e;
  }
  float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}


// s[r][j0 + j] = sum_d q[r][d] * kt[d][j0 + j] for R rows and j < C*W: a register tile of
// R x C vectors of W floats (kt is K transposed, [D, ldk], zero-padded to whole vectors).
template <int W, int R, int C>
INGOT_ATT_INLINE void qk_tile(const float* const* q, const float* kt, int64_t ldk, int64_t D, float* const* s,
                              int64_t j0) {
  typedef float V __attribute__((vector_size(W * sizeof(float))));
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  const float* k = kt + j0;
  for (int64_t d = 0; d < D; ++d, k += ldk) {
    V kv[C];
    for (int c = 0; c < C; ++c) std::memcpy(&kv[c], k + c * W, sizeof(V));
    for (int r = 0; r < R; ++r) {
      V a = q[r][d] - V{};  // broadcast (x - 0 is exact, unlike 0 + x for x = -0)
      for (int c = 0; c < C; ++c) acc[r][c] += a * kv[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) std::memcpy(s[r] + j0 + c * W, &acc[r][c], sizeof(V));
}

// o[r][d0 + d] = sum_{j < n} p[r][j] * v[j][d0 + d] for R rows and d < C*W (v is [n, ldv],
// zero-padded to whole vectors).
template <int W, int R, int C>
INGOT_ATT_INLINE void pv_tile(float* const* p, const float* v, int64_t ldv, int64_t n, float* const* o, int64_t d0) {
  typedef float V __attribute__((vector_size(W * sizeof(float))));
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = V{};
  const float* vj = v + d0;
  for (int64_t j = 0; j < n; ++j, vj += ldv) {
    V vv[C];
    for (int c = 0; c < C; ++c) std::memcpy(&vv[c], vj + c * W, sizeof(V));
    for (int r = 0; r < R; ++r) {
      V a = p[r][j] - V{};
      for (int c = 0; c < C; ++c) acc[r][c] += a * vv[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) std::memcpy(o[r] + d0 + c * W, &acc[r][c], sizeof(V));
}

// Everything the attention core needs: qkv [B*S, 3N] (Q | K | V, head h at columns h*D) ->
// context [B*S, N]; masks are read through broadcast strides (m_b, m_h, m_q, m_k).
struct Core {
  int64_t B, S, H, D, N;
  const float* qkv;
  float* context;  // [B * Sq, N]: row i of batch b is query position qpos[i] (i without qpos)
  const float* madd;  // mask_kind add, or null
  const bool* mbool;  // mask_kind bool, or null
  int64_t m_b, m_h, m_q, m_k;
  float scale, filter;
  bool causal, nan_to_zero;
  bool skippable;  // masked keys mean exactly "probability 0" (they may be left out)
  int64_t Sq;            // output rows per batch: S, or the count of qpos
  const int64_t* qpos;   // the query position of each output row (ingot.Attention's query_rows), or null: all
  int64_t pos(int64_t i) const { return qpos ? qpos[i] : i; }
};

constexpr int64_t kQueryBlock = 64;

// Tasks [begin, end) of the attention core; task = (batch * H + head) * qblocks + block of output rows.
// W is the vector width in floats; the tiles are R query rows by C vectors.
template <int W>
INGOT_ATT_INLINE void core_tasks(const Core& c, int64_t begin, int64_t end) {
  constexpr int R = W >= 16 ? 6 : 4, C = W >= 16 ? 4 : 3;  // accumulators + loads fit the 32 zmm / 16 ymm
  const int64_t S = c.S, Sq = c.Sq, D = c.D, ld = 3 * c.N, qblocks = (Sq + kQueryBlock - 1) / kQueryBlock;
  const int64_t Sp = (S + W - 1) / W * W, Dp = (D + W - 1) / W * W;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const float fill = c.nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN();
  std::vector<float> kt(size_t(D * Sp), 0.f), v(size_t(S * Dp), 0.f), sbuf(size_t(R * Sp), 0.f),
      obuf(size_t(R * Dp), 0.f);
  int64_t limit[kQueryBlock];
  int64_t packed_bh = -1;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t bh = task / qblocks, qb = task % qblocks, b = bh / c.H, h = bh % c.H;
    const int64_t q0 = qb * kQueryBlock, q1 = std::min(Sq, q0 + kQueryBlock);
    // Keys each query can see: masked (-inf) keys at the end of a row are never computed.
    int64_t nkeys = 0;
    for (int64_t i = q0; i < q1; ++i) {
      int64_t n = c.causal ? c.pos(i) + 1 : S;
      if (c.skippable) {
        const int64_t base = b * c.m_b + h * c.m_h + c.pos(i) * c.m_q;
        while (n > 0 && (c.madd ? c.madd[base + (n - 1) * c.m_k] == kNegInf : !c.mbool[base + (n - 1) * c.m_k])) --n;
      }
      limit[i - q0] = n;
      nkeys = std::max(nkeys, n);
    }
    if (bh != packed_bh) {  // K_h transposed to [D, Sp] and V_h to [S, Dp], once per head
      const float* kp = c.qkv + b * S * ld + c.N + h * D;
      const float* vp = kp + c.N;
      for (int64_t j0 = 0; j0 < S; j0 += 16) {  // 16-key panels keep the transposed writes in cache
        const int64_t j1 = std::min(S, j0 + 16);
        for (int64_t e = 0; e < D; ++e)
          for (int64_t j = j0; j < j1; ++j) kt[size_t(e * Sp + j)] = kp[j * ld + e];
      }
      for (int64_t j = 0; j < S; ++j) std::copy_n(vp + j * ld, D, v.data() + j * Dp);
      packed_bh = bh;
    }
    for (int64_t i0 = q0; i0 < q1; i0 += R) {
      const int rows = int(std::min<int64_t>(R, q1 - i0));
      if (nkeys == 0) {  // every key masked for every row: softmax of all -inf
        for (int r = 0; r < rows; ++r) std::fill_n(c.context + (b * Sq + i0 + r) * c.N + h * D, D, fill);
        continue;
      }
      const float* q[R];
      float* s[R];
      float* o[R];
      for (int r = 0; r < R; ++r) {  // rows past the block's end repeat its last row (results unused)
        q[r] = c.qkv + (b * S + c.pos(i0 + std::min(r, rows - 1))) * ld + h * D;
        s[r] = sbuf.data() + r * Sp;
        o[r] = obuf.data() + r * Dp;
      }
      const int64_t jn = (nkeys + W - 1) / W * W;
      for (int64_t j0 = 0; j0 < jn; j0 += C * W) {
        switch (std::min<int64_t>(C, (jn - j0) / W)) {
          case C: qk_tile<W, R, C>(q, kt.data(), Sp, D, s, j0); break;
          case C - 1: qk_tile<W, R, C - 1>(q, kt.data(), Sp, D, s, j0); break;
          case C - 2: qk_tile<W, R, C - 2>(q, kt.data(), Sp, D, s, j0); break;
          default: qk_tile<W, R, 1>(q, kt.data(), Sp, D, s, j0); break;
        }
      }
      for (int r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        int64_t n = limit[i - q0];
        float* sr = s[r];
        const int64_t base = b * c.m_b + h * c.m_h + c.pos(i) * c.m_q;
        const float scale = c.scale;
        if (c.madd && c.m_k == 1) {
          const float* m = c.madd + base;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) sr[j] = sr[j] * scale + m[j];
        } else if (c.madd) {
          for (int64_t j = 0; j < n; ++j) sr[j] = sr[j] * scale + c.madd[base + j * c.m_k];
        } else if (c.mbool) {
          const float f = c.filter;
          for (int64_t j = 0; j < n; ++j) sr[j] = sr[j] * scale + (c.mbool[base + j * c.m_k] ? 0.f : f);
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) sr[j] *= scale;
        }
        if (n == 0) {  // this row alone is fully masked
          std::fill(sr, sr + nkeys, kNegInf);
          n = nkeys;
        }
        std::fill(sr + n, sr + nkeys, kNegInf);
        softmax_row(sr, nkeys, c.nan_to_zero);
      }
      for (int64_t d0 = 0; d0 < Dp; d0 += C * W) {
        switch (std::min<int64_t>(C, (Dp - d0) / W)) {
          case C: pv_tile<W, R, C>(s, v.data(), Dp, nkeys, o, d0); break;
          case C - 1: pv_tile<W, R, C - 1>(s, v.data(), Dp, nkeys, o, d0); break;
          case C - 2: pv_tile<W, R, C - 2>(s, v.data(), Dp, nkeys, o, d0); break;
          default: pv_tile<W, R, 1>(s, v.data(), Dp, nkeys, o, d0); break;
        }
      }
      for (int r = 0; r < rows; ++r) std::copy_n(o[r], D, c.context + (b * Sq + i0 + r) * c.N + h * D);
    }
  }
}

}  // namespace ingot::attention_util
