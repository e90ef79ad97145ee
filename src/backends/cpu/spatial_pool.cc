// LRN (local response normalisation across channels) and MaxUnpool (scatter of MaxPool's
// values back to their argmax positions).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::to_doubles;

// ---------------------------------------------------------------------------------------------
// LRN: y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta, the window being
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels.

class LrnKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    if (!node.attrs.has("size")) return invalid_model("attribute size is required");
    size_ = node.attrs.get_int("size", 1);
    if (size_ <= 0) return invalid_model("attribute size is " + std::to_string(size_) + "; expected > 0");
    alpha_ = node.attrs.get_float("alpha", 1e-4f);
    beta_ = node.attrs.get_float("beta", 0.75f);
    bias_ = node.attrs.get_float("bias", 1.0f);
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input (X)");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    if (ctx.input_rank(0) < 2) {
      return invalid_argument("input 0 (X) has shape " + shape_str(ctx.input_shape(0)) + "; expected rank >= 2 ([N, C, ...])");
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t N = x.dim(0), C = x.dim(1);
    const int64_t sp = N * C == 0 ? 0 : x.numel() / (N * C);
    const int64_t lo = (size_ - 1) / 2, hi = size_ - 1 - lo;
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* X = x.data<T>();
      T* Y = y.data<T>();
      const A k = A(alpha_) / A(size_), bias = A(bias_), beta = A(beta_);
      parallel_for(N * C, sp * (size_ + 8), [&](int64_t b, int64_t e) {
        std::vector<A> acc(static_cast<size_t>(sp));
        for (int64_t nc = b; nc < e; ++nc) {
          int64_t n = nc / C, c = nc % C;
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t cc = std::max<int64_t>(0, c - lo); cc <= std::min(C - 1, c + hi); ++cc) {
            const T* p = X + (n * C + cc) * sp;
            for (int64_t i = 0; i < sp; ++i) { A v = A(p[i]); acc[size_t(i)] += v * v; }
          }
          const T* p = X + nc * sp;
          T* q = Y + nc * sp;
          for (int64_t i = 0; i < sp; ++i) q[i] = T(A(p[i]) / std::pow(bias + k * acc[size_t(i)], beta));
        }
      });
    });
    return Status::ok();
  }

 private:
  int64_t size_ = 1;
  float alpha_ = 1e-4f, beta_ = 0.75f, bias_ = 1.0f;
};

// ---------------------------------------------------------------------------------------------
// MaxUnpool: X [N, C, D1..Dk] values, I (same shape) flat indices into Y, optional
// output_shape. Y defaults to (D - 1) * stride - pad_begin - pad_end + kernel per spatial dim.

class MaxUnpoolKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    kernel_ = node.attrs.get_ints("kernel_shape");
    if (kernel_.empty()) return invalid_model("attribute kernel_shape is required");
    size_t k = kernel_.size();
    strides_ = node.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
    pads_ = node.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (strides_.size() != k) return invalid_model("attribute strides has " + std::to_string(strides_.size()) +
                                                   " values, expected " + std::to_string(k) + " (one per kernel dim)");
    if (pads_.size() != 2 * k) return invalid_model("attribute pads has " + std::to_string(pads_.size()) +
                                                    " values, expected " + std::to_string(2 * k));
    for (size_t i = 0; i < k; ++i) {
      if (kernel_[i] <= 0 || strides_[i] <= 0) return invalid_model("kernel_shape and strides must be positive");
    }
    for (int64_t p : pads_) if (p < 0) return invalid_model("attribute pads has a negative value");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs X and I");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    if (ctx.input_dtype(1) != DType::kInt64) {
      return invalid_argument("input 1 (I) has dtype " + dtype_name(ctx.input_dtype(1)) + "; expected int64");
    }
    const Shape& xs = ctx.input_shape(0);
    if (xs.size() != kernel_.size() + 2) {
      return invalid_argument("input 0 (X) has shape " + shape_str(xs) + "; expected rank " +
                              std::to_string(kernel_.size() + 2) + " (N, C and one dim per kernel_shape value)");
    }
    if (ctx.input_shape(1) != xs) {
      return invalid_argument("input 1 (I) has shape " + shape_str(ctx.input_shape(1)) + ", expected " + shape_str(xs) +
                              " (the shape of X)");
    }
    if (ctx.has_input(2)) {
      const Tensor* os = ctx.input_value(2);
      if (!os) {
        ctx.set_output_dynamic(0, ctx.input_dtype(0));
        return Status::ok();
      }
      INGOT_ASSIGN_OR_RETURN(Shape s, explicit_shape(*os, xs));
      ctx.set_output(0, ctx.input_dtype(0), s);
      return Status::ok();
    }
    Shape out = default_shape(xs);
    for (size_t i = 2; i < out.size(); ++i) {
      if (out[i] < 0) return invalid_argument("the output spatial dim " + std::to_string(i) + " would be negative");
    }
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    // Indices address the default unpooled shape (as ONNX's reference does); an explicit
    // output_shape pads that result with zeros at the end of each spatial dim.
    Shape def = default_shape(x.shape());
    Tensor* yp;
    if (ctx.has_input(2)) {
      INGOT_ASSIGN_OR_RETURN(Shape s, explicit_shape(ctx.input(2), x.shape()));
      for (size_t i = 2; i < s.size(); ++i) {
        if (s[i] < def[i]) {
          return invalid_argument("input 2 (output_shape) is " + shape_str(s) + ", smaller than the unpooled shape " +
                                  shape_str(def) + " in dim " + std::to_string(i));
        }
      }
      yp = &ctx.allocate_output(0, x.dtype(), s);
    } else {
      yp = &ctx.output(0);
    }
    Tensor& y = *yp;
    const int64_t total = shape_numel(def);
    const int64_t* I = ind.data<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (I[i] < 0 || I[i] >= total) {
        return invalid_argument("input 1 (I) has index " + std::to_string(I[i]) + " at position " + std::to_string(i) +
                                ", out of range [0, " + std::to_string(total) + ") for the unpooled shape " +
                                shape_str(def));
      }
    }
    const bool same = y.shape() == def;
    const int rank = int(def.size());
    auto remap = [&](int64_t idx) {
      if (same) return idx;
      int64_t off = 0, mul = 1;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t c = idx % def[size_t(d)];
        idx /= def[size_t(d)];
        off += c * mul;
        mul *= y.shape()[size_t(d)];
      }
      return off;
    };
    dispatch_by_size(x.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* X = x.data<U>();
      U* Y = y.data<U>();
      for (int64_t i = 0; i < x.numel(); ++i) Y[remap(I[i])] = X[i];
    });
    return Status::ok();
  }

 private:
  Shape default_shape(const Shape& xs) const {
    Shape out = {xs[0], xs[1]};
    for (size_t i = 0; i < kernel_.size(); ++i)
      out.push_back((xs[i + 2] - 1) * strides_[i] - pads_[i] - pads_[i + kernel_.size()] + kernel_[i]);
    return out;
  }

  Expected<Shape> explicit_shape(const Tensor& os, const Shape& xs) const {
    if (!dtype_is_integer(os.dtype()) || os.rank() != 1 || os.numel() != int64_t(xs.size())) {
      return invalid_argument("input 2 (output_shape) has shape " + shape_str(os.shape()) + " and dtype " +
                              dtype_name(os.dtype()) + "; expected " + std::to_string(xs.size()) + " int64 values");
    }
    Shape s = os.to_int_vector();
    if (s[0] != xs[0] || s[1] != xs[1]) {
      return invalid_argument("input 2 (output_shape) is " + shape_str(s) + "; its N and C must match X " + shape_str(xs));
    }
    for (int64_t d : s) if (d < 0) return invalid_argument("input 2 (output_shape) has a negative dim: " + shape_str(s));
    return s;
  }

  std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", LRN, LrnKernel);
INGOT_REGISTER_KERNEL(cpu, "", MaxUnpool, MaxUnpoolKernel);

}  // namespace ingot
