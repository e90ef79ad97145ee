// ingot.ClassifierHead (made by the fuse_classifier_head pass, CUDA engines): a sequence
// classifier's head on the rows it reads, as one op, optionally with the transformer's last
// feed-forward block before it:
//
//   (with inputs 13 to 15: X is an attention's context, its output projection comes first)
//   X  = X · Wo + bo + R[row, residual_position]   rounded to X's dtype
//   (with inputs 7 to 12)
//   Hf = LayerNorm(X, ffn_gamma, ffn_beta)   over the last axis (ffn_epsilon), rounded to X's dtype
//   G  = ffn_act(Hf · F1 + fb1)              rounded to X's dtype
//   X  = G · F2 + fb2 + Hf                   rounded to X's dtype (the block's residual)
//   (the head)
//   Xn = LayerNorm(X, gamma, beta)          over the last axis, rounded to X's dtype
//   H  = act(Xn · W1 + b1)                   rounded to X's dtype
//   Y  = H · W2 + b2                         in X's dtype, or float32 (output_dtype 1)
//
// inputs X [..., K], gamma [K], beta [K] (optional), W1 [K, N1], b1 [N1] (optional),
// W2 [N1, N2], b2 [N2] (optional), then optionally ffn_gamma [K], ffn_beta [K] (optional),
// F1 [K, NF], fb1 [NF] (optional), F2 [NF, K], fb2 [K] (optional), then optionally (with those)
// Wo [N, K], bo [K] (optional), R [rows, S, K], X then being [..., N]; attributes epsilon,
// activation ("" | "Relu" | "Tanh" | "Gelu" | "GeluTanh"), output_dtype (0: X's dtype, 1:
// float32), ffn_epsilon, ffn_activation ("" | "Relu" | "Gelu" | "GeluTanh"), residual_position
// (the row of R's sequence axis each row's residual is at; negative: from the end). Every input
// shares X's dtype. The rounding points are the unfused graph's (each op stores its output), so
// this kernel is the reference the CUDA kernel is tested against; CPU engines never make the op.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/row_reference.h"
#include "ir/classifier_head_attrs.h"
#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::check_float;
using namespace row_reference;

class ClassifierHeadKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }

  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_classifier_head(node));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "gamma", "beta", "W1", "b1", "W2", "b2", "ffn_gamma", "ffn_beta",
                                  "F1", "fb1", "F2", "fb2", "Wo", "bo", "R"};
    const int n = ctx.num_inputs();
    if (n != kFfnGamma && n != kProjW && n != kHeadInputs)
      return invalid_model("needs 7 inputs (X, gamma, beta, W1, b1, W2, b2), 13 with the feed-forward block's "
                           "(ffn_gamma, ffn_beta, F1, fb1, F2, fb2) or 16 with the output projection's (Wo, bo, R), got " +
                           std::to_string(n));
    for (int i : {kHeadX, kHeadGamma, kHeadW1, kHeadW2, kFfnGamma, kFfnW1, kFfnW2, kProjW, kProjResidual})
      if (i < n && !ctx.has_input(i))
        return invalid_model(std::string("needs input ") + std::to_string(i) + " (" + names[i] + ")");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    const DType t = ctx.input_dtype(0);
    for (int i = 1; i < n; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has dtype " +
                                dtype_name(ctx.input_dtype(i)) + ", X has " + dtype_name(t));
    const Shape& x = ctx.input_shape(0);
    if (x.empty()) return invalid_argument("input 0 (X) must have rank >= 1, got a scalar");
    const bool projection = n == kHeadInputs;
    const int64_t K = projection && ctx.input_shape(kProjW).size() == 2 ? ctx.input_shape(kProjW)[1] : x.back();
    auto matrix = [&](int i, int64_t rows, const char* cols) -> Status {
      const Shape& s = ctx.input_shape(i);
      if (s.size() != 2 || s[0] != rows)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " + shape_str(s) +
                                ", expected [" + std::to_string(rows) + ", " + cols + "]");
      return Status::ok();
    };
    auto vector = [&](int i, int64_t len) -> Status {
      if (!ctx.has_input(i)) return Status::ok();
      const Shape& s = ctx.input_shape(i);
      if (s.size() != 1 || s[0] != len)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " + shape_str(s) +
                                ", expected [" + std::to_string(len) + "]");
      return Status::ok();
    };
    const char* k_is = projection ? "N1] (K = Wo's columns" : "N1] (K = X's last dim";
    if (projection) {
      INGOT_RETURN_IF_ERROR(matrix(kProjW, x.back(), "K] (N = X's last dim"));
      INGOT_RETURN_IF_ERROR(vector(kProjB, K));
      const Shape& r = ctx.input_shape(kProjResidual);
      const int64_t rows = shape_numel(x) / std::max<int64_t>(x.back(), 1);
      if (r.size() != 3 || r[0] != rows || r[2] != K)
        return invalid_argument("input 15 (R) has shape " + shape_str(r) + ", expected [" + std::to_string(rows) +
                                ", S, " + std::to_string(K) + "] (X's rows, a sequence, K)");
      const int64_t pos = spec_.residual_position;
      if (pos < -r[1] || pos >= r[1])
        return invalid_argument("attribute 'residual_position' = " + std::to_string(pos) + " is outside [-" +
                                std::to_string(r[1]) + ", " + std::to_string(r[1]) + ") (input 15's sequence axis)");
    }
    INGOT_RETURN_IF_ERROR(matrix(kHeadW1, K, k_is));
    const int64_t N1 = ctx.input_shape(kHeadW1)[1];
    INGOT_RETURN_IF_ERROR(matrix(kHeadW2, N1, "N2] (N1 = W1's columns"));
    INGOT_RETURN_IF_ERROR(vector(kHeadGamma, K));
    INGOT_RETURN_IF_ERROR(vector(kHeadBeta, K));
    INGOT_RETURN_IF_ERROR(vector(kHeadB1, N1));
    INGOT_RETURN_IF_ERROR(vector(kHeadB2, ctx.input_shape(kHeadW2)[1]));
    if (n >= kProjW) {
      INGOT_RETURN_IF_ERROR(matrix(kFfnW1, K, projection ? "NF] (K = Wo's columns" : "NF] (K = X's last dim"));
      const int64_t NF = ctx.input_shape(kFfnW1)[1];
      const std::string k = std::to_string(K) + (projection ? "] (K = Wo's columns" : "] (K = X's last dim");
      INGOT_RETURN_IF_ERROR(matrix(kFfnW2, NF, k.c_str()));
      if (ctx.input_shape(kFfnW2)[1] != K)
        return invalid_argument("input 11 (F2) has shape " + shape_str(ctx.input_shape(kFfnW2)) + ", expected [" +
                                std::to_string(NF) + ", " + std::to_string(K) + "]" + (projection ? " (K = Wo's columns)" : " (K = X's last dim)"));
      INGOT_RETURN_IF_ERROR(vector(kFfnGamma, K));
      INGOT_RETURN_IF_ERROR(vector(kFfnBeta, K));
      INGOT_RETURN_IF_ERROR(vector(kFfnB1, NF));
      INGOT_RETURN_IF_ERROR(vector(kFfnB2, K));
    }
    Shape out(x.begin(), x.end() - 1);
    out.push_back(ctx.input_shape(kHeadW2)[1]);
    ctx.set_output(0, spec_.float_output ? DType::kFloat32 : t, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(kHeadX);
    const int64_t N = x.shape().back(), N2 = ctx.input(kHeadW2).dim(1);
    const int64_t K = spec_.projection ? ctx.input(kProjW).dim(1) : N;
    const int64_t rows = ctx.output(0).numel() / std::max<int64_t>(N2, 1);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const Norm<T> head_norm = norm_of<T>(ctx, kHeadGamma, kHeadBeta, K, spec_.epsilon);
      const Product<T> w1 = product_of<T>(ctx, kHeadW1, kHeadB1), w2 = product_of<T>(ctx, kHeadW2, kHeadB2);
      const Norm<T> ffn_norm = spec_.ffn ? norm_of<T>(ctx, kFfnGamma, kFfnBeta, K, spec_.ffn_epsilon) : Norm<T>{};
      const Product<T> f1 = spec_.ffn ? product_of<T>(ctx, kFfnW1, kFfnB1) : Product<T>{};
      const Product<T> f2 = spec_.ffn ? product_of<T>(ctx, kFfnW2, kFfnB2) : Product<T>{};
      const Product<T> wo = spec_.projection ? product_of<T>(ctx, kProjW, kProjB) : Product<T>{};
      const T* residual = spec_.projection ? ctx.input(kProjResidual).data<T>() : nullptr;
      const int64_t S = spec_.projection ? ctx.input(kProjResidual).dim(1) : 0;
      const int64_t pos = spec_.residual_position < 0 ? spec_.residual_position + S : spec_.residual_position;
      const T* px = x.data<T>();
      Tensor& y = ctx.output(0);
      parallel_for(rows, 1, [&](int64_t b, int64_t e) {
        std::vector<float> xr(static_cast<size_t>(N)), xn, g, h, out, res(spec_.projection ? size_t(K) : 0);
        for (int64_t r = b; r < e; ++r) {
          xr.resize(size_t(N));
          for (int64_t k = 0; k < N; ++k) xr[size_t(k)] = float(px[r * N + k]);
          if (spec_.projection) {
            const T* rr = residual + (r * S + pos) * K;
            for (int64_t k = 0; k < K; ++k) res[size_t(k)] = float(rr[k]);
            xr = wo.apply(xr, HeadActivation::kNone, &res);
          }
          if (spec_.ffn) {
            const std::vector<float> hf = ffn_norm.apply(xr);
            g = f1.apply(hf, spec_.ffn_act);
            xr = f2.apply(g, HeadActivation::kNone, &hf);
          }
          xn = head_norm.apply(xr);
          h = w1.apply(xn, spec_.act);
          out = w2.apply(h, HeadActivation::kNone, nullptr, /*round=*/false);
          for (int64_t n = 0; n < N2; ++n) {
            if (spec_.float_output) y.data<float>()[r * N2 + n] = out[size_t(n)];
            else y.data<T>()[r * N2 + n] = T(out[size_t(n)]);
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
