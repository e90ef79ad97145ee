// Row statistics of the CPU's LayerNorm-style kernels: LayerNormalization and GroupNormalization
// (norm_layer.cc) and the LayerNorm ingot.FusedMatMul and ingot.Attention apply to their output
// (norm_gamma / norm_beta inputs). One implementation, so a folded LayerNorm gives the numbers the
// LayerNormalization node it replaces gives.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cpu/float_kernel_util.h"
#include "runtime/parallel.h"

namespace ingot::cpu {

// Σ f(p[i]) over a row (f of the element in its accumulation type), with 8 independent lanes
// (vectorisable without -ffast-math); lanes are flushed into a double every 1024 elements so long
// rows keep their precision.
template <class T, class F>
double row_lane_sum(const T* p, int64_t n, F f) {
  using A = AccOf<T>;
  double total = 0;
  for (int64_t b = 0; b < n; b += 1024) {
    int64_t e = std::min(n, b + 1024);
    A lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      for (int l = 0; l < 8; ++l) lane[l] += f(A(p[i + l]));
    for (; i < e; ++i) lane[0] += f(A(p[i]));
    for (int l = 0; l < 8; ++l) total += double(lane[l]);
  }
  return total;
}

// Mean and 1/sqrt(var + eps) of a contiguous row, two passes.
template <class T>
void row_stats(const T* p, int64_t n, double eps, double* mean, double* inv_std) {
  using A = AccOf<T>;
  double m = n ? row_lane_sum(p, n, [](A x) { return x; }) / double(n) : 0.0;
  const A am = A(m);
  double var = n ? row_lane_sum(p, n, [am](A x) { A d = x - am; return d * d; }) / double(n) : 0.0;
  *mean = m;
  *inv_std = 1.0 / std::sqrt(var + eps);
}

// LayerNorm of each of `rows` float32 rows of n, in place: y = (y - mean) / sqrt(var + eps) *
// gamma + beta (beta null: 0), with LayerNormalization's arithmetic.
inline void layer_norm_rows(float* y, int64_t rows, int64_t n, const float* gamma, const float* beta, float eps) {
  parallel_for(rows, n * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* q = y + r * n;
      double m, inv;
      row_stats(q, n, double(eps), &m, &inv);
      const float fm = float(m), fi = float(inv);
      if (beta) {
        for (int64_t k = 0; k < n; ++k) q[k] = (q[k] - fm) * fi * gamma[k] + beta[k];
      } else {
        for (int64_t k = 0; k < n; ++k) q[k] = (q[k] - fm) * fi * gamma[k];
      }
    }
  });
}

}  // namespace ingot::cpu
