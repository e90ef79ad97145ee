// Row-at-a-time reference arithmetic of a fused op whose CPU kernel is the reference its CUDA
// kernels are tested against (ingot.ClassifierHead): a LayerNorm and a matrix product on one row,
// each rounded where the unfused graph stores its output.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cpu/fused_norm_util.h"
#include "ir/classifier_head_attrs.h"
#include "runtime/kernel.h"

namespace ingot::row_reference {

inline float activate(float v, HeadActivation act) {
  switch (act) {
    case HeadActivation::kNone: return v;
    case HeadActivation::kRelu: return v > 0.f ? v : 0.f;
    case HeadActivation::kTanh: return std::tanh(v);
    case HeadActivation::kGeluErf: return float(fused::gelu_erf(double(v)));
    case HeadActivation::kGeluTanh: return float(fused::gelu_tanh(double(v)));
  }
  return v;
}

// A LayerNorm over rows of K with float32 statistics, its output rounded to T.
template <class T>
struct Norm {
  std::vector<float> gamma, beta;
  float epsilon = 0.f;
  std::vector<float> apply(const std::vector<float>& x) const {
    const size_t K = x.size();
    double sum = 0, sq = 0;
    for (float v : x) sum += double(v);
    const double mean = K ? sum / double(K) : 0;
    for (float v : x) sq += (double(v) - mean) * (double(v) - mean);
    const float inv = float(1.0 / std::sqrt((K ? sq / double(K) : 0) + double(epsilon)));
    std::vector<float> y(K);
    for (size_t k = 0; k < K; ++k) y[k] = float(T((x[k] - float(mean)) * inv * gamma[k] + beta[k]));
    return y;
  }
};

// y = act(x · W + bias [+ residual]) with float32 sums, rounded to T unless `round` is false.
template <class T>
struct Product {
  const T* w = nullptr;
  int64_t K = 0, N = 0;
  std::vector<float> bias;
  std::vector<float> apply(const std::vector<float>& x, HeadActivation act, const std::vector<float>* residual = nullptr,
                           bool round = true) const {
    std::vector<float> acc(size_t(N), 0.f);
    for (int64_t k = 0; k < K; ++k) {
      const T* wk = w + k * N;
      for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += x[size_t(k)] * float(wk[j]);
    }
    for (int64_t j = 0; j < N; ++j) {
      float v = acc[size_t(j)] + bias[size_t(j)];
      if (residual) v += (*residual)[size_t(j)];
      v = activate(v, act);
      acc[size_t(j)] = round ? float(T(v)) : v;
    }
    return acc;
  }
};

template <class T>
std::vector<float> values_of(const ComputeContext& ctx, int i, int64_t n, float absent) {
  std::vector<float> v(size_t(n), absent);
  if (ctx.has_input(i))
    for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float(ctx.input(i).data<T>()[k]);
  return v;
}

template <class T>
Norm<T> norm_of(const ComputeContext& ctx, int gamma, int beta, int64_t K, float epsilon) {
  return Norm<T>{values_of<T>(ctx, gamma, K, 1.f), values_of<T>(ctx, beta, K, 0.f), epsilon};
}

template <class T>
Product<T> product_of(const ComputeContext& ctx, int w, int bias) {
  const Tensor& t = ctx.input(w);
  return Product<T>{t.data<T>(), t.dim(0), t.dim(1), values_of<T>(ctx, bias, t.dim(1), 0.f)};
}

}  // namespace ingot::row_reference
