// ingot.ClassifierHead (made by the fuse_classifier_head pass, CUDA engines): a sequence
// classifier's head on the rows it reads, as one op:
//
//   Xn = LayerNorm(X, gamma, beta)          over the last axis, rounded to X's dtype
//   H  = act(Xn · W1 + b1)                   rounded to X's dtype
//   Y  = H · W2 + b2                         in X's dtype, or float32 (output_dtype 1)
//
// inputs X [..., K], gamma [K], beta [K] (optional), W1 [K, N1], b1 [N1] (optional),
// W2 [N1, N2], b2 [N2] (optional); attributes epsilon, activation ("" | "Relu" | "Tanh" |
// "Gelu" | "GeluTanh"), output_dtype (0: X's dtype, 1: float32). Every input shares X's dtype.
// The rounding points are the unfused graph's (each op stores its output), so this kernel is the
// reference the CUDA kernel is tested against; CPU engines never make the op.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/fused_norm_util.h"
#include "ir/classifier_head_attrs.h"
#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::check_float;

float activate(float v, HeadActivation act) {
  switch (act) {
    case HeadActivation::kNone: return v;
    case HeadActivation::kRelu: return v > 0.f ? v : 0.f;
    case HeadActivation::kTanh: return std::tanh(v);
    case HeadActivation::kGeluErf: return float(fused::gelu_erf(double(v)));
    case HeadActivation::kGeluTanh: return float(fused::gelu_tanh(double(v)));
  }
  return v;
}

class ClassifierHeadKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }

  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_classifier_head(node));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "gamma", "beta", "W1", "b1", "W2", "b2"};
    if (ctx.num_inputs() != 7) return invalid_model("needs 7 inputs (X, gamma, beta, W1, b1, W2, b2), got " +
                                                    std::to_string(ctx.num_inputs()));
    for (int i : {0, 1, 3, 5})
      if (!ctx.has_input(i)) return invalid_model(std::string("needs input ") + std::to_string(i) + " (" + names[i] + ")");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    const DType t = ctx.input_dtype(0);
    for (int i = 1; i < 7; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has dtype " +
                                dtype_name(ctx.input_dtype(i)) + ", X has " + dtype_name(t));
    const Shape& x = ctx.input_shape(0);
    const Shape& w1 = ctx.input_shape(3);
    const Shape& w2 = ctx.input_shape(5);
    if (x.empty()) return invalid_argument("input 0 (X) must have rank >= 1, got a scalar");
    if (w1.size() != 2 || w1[0] != x.back())
      return invalid_argument("input 3 (W1) has shape " + shape_str(w1) + ", expected [" + std::to_string(x.back()) +
                              ", N1] (K = X's last dim)");
    if (w2.size() != 2 || w2[0] != w1[1])
      return invalid_argument("input 5 (W2) has shape " + shape_str(w2) + ", expected [" + std::to_string(w1[1]) +
                              ", N2] (N1 = W1's columns)");
    const int64_t lengths[] = {0, x.back(), x.back(), 0, w1[1], 0, w2[1]};
    for (int i : {1, 2, 4, 6}) {
      if (!ctx.has_input(i)) continue;
      const Shape& s = ctx.input_shape(i);
      if (s.size() != 1 || s[0] != lengths[i])
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " + shape_str(s) +
                                ", expected [" + std::to_string(lengths[i]) + "]");
    }
    Shape out(x.begin(), x.end() - 1);
    out.push_back(w2[1]);
    ctx.set_output(0, spec_.float_output ? DType::kFloat32 : t, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t K = x.shape().back(), N1 = ctx.input(3).dim(1), N2 = ctx.input(5).dim(1);
    const int64_t rows = K ? x.numel() / K : ctx.output(0).numel() / std::max<int64_t>(N2, 1);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto values = [&](int i, int64_t n, float def) {
        std::vector<float> v(size_t(n), def);
        if (ctx.has_input(i))
          for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float(ctx.input(i).data<T>()[k]);
        return v;
      };
      const std::vector<float> gamma = values(1, K, 1.f), beta = values(2, K, 0.f), b1 = values(4, N1, 0.f),
                               b2 = values(6, N2, 0.f);
      const T* px = x.data<T>();
      const T* w1 = ctx.input(3).data<T>();
      const T* w2 = ctx.input(5).data<T>();
      Tensor& y = ctx.output(0);
      parallel_for(rows, 1, [&](int64_t b, int64_t e) {
        std::vector<float> xn(static_cast<size_t>(K)), h(static_cast<size_t>(N1));
        for (int64_t r = b; r < e; ++r) {
          const T* xr = px + r * K;
          double sum = 0, sq = 0;
          for (int64_t k = 0; k < K; ++k) sum += double(float(xr[k]));
          const double mean = K ? sum / double(K) : 0;
          for (int64_t k = 0; k < K; ++k) sq += (double(float(xr[k])) - mean) * (double(float(xr[k])) - mean);
          const float inv = float(1.0 / std::sqrt((K ? sq / double(K) : 0) + double(spec_.epsilon)));
          for (int64_t k = 0; k < K; ++k)
            xn[size_t(k)] = float(T((float(xr[k]) - float(mean)) * inv * gamma[size_t(k)] + beta[size_t(k)]));
          std::vector<float> acc(static_cast<size_t>(N1), 0.f);
          for (int64_t k = 0; k < K; ++k) {
            const T* wk = w1 + k * N1;
            for (int64_t j = 0; j < N1; ++j) acc[size_t(j)] += xn[size_t(k)] * float(wk[j]);
          }
          for (int64_t j = 0; j < N1; ++j) h[size_t(j)] = float(T(activate(acc[size_t(j)] + b1[size_t(j)], spec_.act)));
          for (int64_t n = 0; n < N2; ++n) {
            float v = 0.f;
            for (int64_t j = 0; j < N1; ++j) v += h[size_t(j)] * float(w2[j * N2 + n]);
            v += b2[size_t(n)];
            if (spec_.float_output) y.data<float>()[r * N2 + n] = v;
            else y.data<T>()[r * N2 + n] = T(v);
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  ClassifierHeadSpec spec_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", ClassifierHead, ClassifierHeadKernel);

}  // namespace ingot
