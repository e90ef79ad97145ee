// Inner loops of the ingot.Attention kernel, written so the compiler vectorises them (plain
// loops over contiguous floats with `omp simd`; no intrinsics, so they follow -march).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ingot::attention_util {

// exp(x) for x <= 0 (softmax arguments after max subtraction), vectorisable: range reduction
// to 2^n * e^r with |r| <= ln2/2 and a degree-6 polynomial (relative error ~2e-7, well inside
// the 1e-4 the fused path must hold). Arguments below -87 give exactly 0, as std::exp(-inf)
// does; NaN stays NaN (the comparisons below are false for NaN).
inline float exp_neg(float x) {
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

// s[j] = sum_d q[r][d] * kt[d][j] for R query rows at once (R <= 4): kt is K transposed,
// [D, ldk], so the inner loop runs over contiguous keys and each kt row is loaded once for
// all R queries.
template <int R>
inline void scores_rows(const float* const* q, const float* kt, int64_t ldk, int64_t D, int64_t n,
                        float* const* s) {
  for (int r = 0; r < R; ++r) std::memset(s[r], 0, size_t(n) * sizeof(float));
  for (int64_t d = 0; d < D; ++d) {
    const float* k = kt + d * ldk;
    float a[R];
    for (int r = 0; r < R; ++r) a[r] = q[r][d];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      float kv = k[j];
      for (int r = 0; r < R; ++r) s[r][j] += a[r] * kv;
    }
  }
}

// out[r][d] = sum_j p[r][j] * v[j][d] for R rows (v is [n, D] contiguous).
template <int R>
inline void context_rows(float* const* p, const float* v, int64_t D, int64_t n, float* const* out) {
  for (int r = 0; r < R; ++r) std::memset(out[r], 0, size_t(D) * sizeof(float));
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = v + j * D;
    float a[R];
    for (int r = 0; r < R; ++r) a[r] = p[r][j];
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) {
      float vv = vj[d];
      for (int r = 0; r < R; ++r) out[r][d] += a[r] * vv;
    }
  }
}

// In-place softmax of s[0, n). With nan_to_zero, NaN probabilities become 0 (the exporters'
// Where(IsNaN(p), 0, p) after a softmax over a fully masked row).
inline void softmax_row(float* s, int64_t n, bool nan_to_zero) {
  float mx = -std::numeric_limits<float>::infinity();
  bool has_nan = false;
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

}  // namespace ingot::attention_util
