// Kernels of the fused ops the optimizer's normalisation/activation passes emit:
//   ingot.Gelu          (fuse_gelu)            y = GELU(x), attr approximate = "none" | "tanh"
//   ingot.SkipLayerNorm (fuse_skip_layer_norm) s = X + skip (+ bias); Y = LayerNorm(s) over the
//       last axis; optional output 1 = s (pre-LN blocks read the sum for the next residual).
// Both exist to save memory passes: the unfused Gelu is 5-8 elementwise nodes, the unfused
// residual+LayerNorm writes the sum to memory and reads it back twice.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/fused_norm_util.h"
#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::to_doubles;

// ---------------------------------------------------------------------------------------------

class GeluKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    std::string a = node.attrs.get_string("approximate", "none");
    if (a != "none" && a != "tanh") return invalid_model("attribute approximate is '" + a + "'; expected \"none\" or \"tanh\"");
    tanh_ = a == "tanh";
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input 0 (X)");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // Two loops with the branch hoisted out so each one vectorises.
      parallel_for(x.numel(), 24, [&](int64_t b, int64_t e) {
        if (tanh_) {
          for (int64_t i = b; i < e; ++i) py[i] = T(fused::gelu_tanh(A(px[i])));
        } else {
          for (int64_t i = b; i < e; ++i) py[i] = T(fused::gelu_erf(A(px[i])));
        }
      });
    });
    return Status::ok();
  }

 private:
  bool tanh_ = false;
};

// ---------------------------------------------------------------------------------------------

// Where row r (of the broadcast output viewed as [rows, H]) of an operand starts, and whether
// the operand advances along H (stride 1) or repeats one value (stride 0).
struct RowMap {
  bool dense = false;               // the operand's shape is the output's: row r starts at r*H
  int64_t inner = 1;                // 1, or 0 when the operand's last dim is 1
  std::vector<int64_t> dims, strides;  // outer output dims and the operand's strides along them

  RowMap(const Shape& in, const Shape& out) {
    dense = in == out;
    std::vector<int64_t> bs = broadcast_strides(in, out);
    inner = bs.back();
    dims.assign(out.begin(), out.end() - 1);
    strides.assign(bs.begin(), bs.end() - 1);
  }
  int64_t offset(int64_t r, int64_t h) const {
    if (dense) return r * h;
    int64_t off = 0;
    for (int d = int(dims.size()) - 1; d >= 0; --d) {
      off += (r % dims[size_t(d)]) * strides[size_t(d)];
      r /= dims[size_t(d)];
    }
    return off;
  }
};

// A per-channel parameter (gamma, beta, bias) as H values of the compute type.
template <class A>
std::vector<A> channel_values(const Tensor& t, int64_t h, A def) {
  std::vector<A> v(size_t(h), def);
  dispatch_float(t.dtype(), [&](auto tag) {
    using P = typename decltype(tag)::type;
    const P* p = t.data<P>();
    for (int64_t k = 0; k < h; ++k) v[size_t(k)] = A(p[t.numel() == 1 ? 0 : k]);
  });
  return v;
}

// T rounded through storage: the unfused graph stores each Add's result as T before the next
// op reads it, so half types round after every addition to match it bit for bit.
template <class T, class A> inline A through(A v) {
  if constexpr (std::is_same_v<T, A>) return v;
  else return A(T(v));
}

class SkipLayerNormKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }
  Status init(const Node& node, int) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    int64_t axis = node.attrs.get_int("axis", -1);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    if (axis != -1) return invalid_model("attribute axis is " + std::to_string(axis) + "; only -1 (the last axis) is supported");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "skip", "gamma", "beta", "bias"};
    for (int i = 0; i < 3; ++i)
      if (!ctx.has_input(i)) return invalid_model(std::string("needs input ") + std::to_string(i) + " (" + names[i] + ")");
    for (int i = 0; i < 5; ++i)
      if (ctx.has_input(i)) INGOT_RETURN_IF_ERROR(check_float(ctx, i, names[i]));
    if (ctx.input_dtype(0) != ctx.input_dtype(1)) {
      return invalid_argument("inputs X and skip have dtypes " + std::string(dtype_name(ctx.input_dtype(0))) + " and " +
                              dtype_name(ctx.input_dtype(1)) + "; expected the same");
    }
    auto out = broadcast_shapes({ctx.input_shape(0), ctx.input_shape(1)});
    if (!out) return out.status().with_context("inputs X and skip: ");
    if (out->empty()) return invalid_argument("inputs X and skip are scalars; expected rank >= 1");
    const int64_t h = out->back();
    for (int i = 2; i < 5; ++i) {
      if (!ctx.has_input(i)) continue;
      const Shape& s = ctx.input_shape(i);
      int64_t n = shape_numel(s);
      if (s.size() > 1 || (n != h && n != 1)) {
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " + shape_str(s) +
                                ", expected [" + std::to_string(h) + "] (the last dim of X + skip)");
      }
    }
    ctx.set_output(0, ctx.input_dtype(0), *out);
    if (ctx.has_output(1)) ctx.set_output(1, ctx.input_dtype(0), *out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    Tensor& y = ctx.output(0);
    const Shape out = y.shape();
    const int64_t h = out.back();
    const int64_t rows = h ? y.numel() / h : 0;
    if (rows == 0) return Status::ok();
    const RowMap xm(x.shape(), out), sm(skip.shape(), out);
    Tensor* sum = ctx.has_output(1) ? &ctx.output(1) : nullptr;
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const std::vector<A> gamma = channel_values<A>(ctx.input(2), h, A(1));
      const std::vector<A> beta = ctx.has_input(3) ? channel_values<A>(ctx.input(3), h, A(0)) : std::vector<A>(size_t(h), A(0));
      const bool has_bias = ctx.has_input(4);
      const std::vector<A> bias = has_bias ? channel_values<A>(ctx.input(4), h, A(0)) : std::vector<A>();
      const T* px = x.data<T>();
      const T* ps = skip.data<T>();
      T* py = y.data<T>();
      T* psum = sum ? sum->data<T>() : nullptr;
      parallel_for(rows, h * 8, [&](int64_t b, int64_t e) {
        std::vector<A> row(static_cast<size_t>(h));  // the row's sum, kept in L1 for the next two sweeps
        A* s = row.data();
        for (int64_t r = b; r < e; ++r) {
          const T* xr = px + xm.offset(r, h);
          const T* sr = ps + sm.offset(r, h);
          // Sweep 1: s = (x + bias) + skip, in the unfused graph's order.
          if (xm.inner && sm.inner) {
            if (has_bias) {
              for (int64_t k = 0; k < h; ++k) s[k] = through<T, A>(through<T, A>(A(xr[k]) + bias[size_t(k)]) + A(sr[k]));
            } else {
              for (int64_t k = 0; k < h; ++k) s[k] = through<T, A>(A(xr[k]) + A(sr[k]));
            }
          } else {
            for (int64_t k = 0; k < h; ++k) {
              A v = A(xr[k * xm.inner]);
              if (has_bias) v = through<T, A>(v + bias[size_t(k)]);
              s[k] = through<T, A>(v + A(sr[k * sm.inner]));
            }
          }
          // Sweep 2: mean and variance from the cached row (two-pass, as LayerNormalization).
          const A mean = A(lane_sum<false>(s, h, A(0)) / double(h));
          const A var = A(lane_sum<true>(s, h, mean) / double(h));
          const A inv = A(1) / std::sqrt(var + A(epsilon_));
          // Sweep 3: normalise; write the sum too when it is an output.
          T* yr = py + r * h;
          for (int64_t k = 0; k < h; ++k) yr[k] = T((s[k] - mean) * inv * gamma[size_t(k)] + beta[size_t(k)]);
          if (psum) {
            T* qr = psum + r * h;
            for (int64_t k = 0; k < h; ++k) qr[k] = T(s[k]);
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  // Sum of s[k] (kSquares: of (s[k] - center)^2), with 16 independent lanes so the loop
  // vectorises without -ffast-math (one AVX-512 register, two AVX2 ones); lanes are flushed
  // into a double every 1024 elements so long rows keep their precision.
  template <bool kSquares, class A>
  static double lane_sum(const A* s, int64_t n, A center) {
    constexpr int L = 16;
    double total = 0;
    for (int64_t b = 0; b < n; b += 1024) {
      const int64_t e = std::min(n, b + 1024);
      A lane[L] = {};
      int64_t i = b;
      for (; i + L <= e; i += L)
        for (int l = 0; l < L; ++l) {
          const A d = s[i + l] - center;
          lane[l] += kSquares ? d * d : d;
        }
      for (; i < e; ++i) {
        const A d = s[i] - center;
        lane[0] += kSquares ? d * d : d;
      }
      for (int l = 0; l < L; ++l) total += double(lane[l]);
    }
    return total;
  }

  float epsilon_ = 1e-5f;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", Gelu, GeluKernel);
INGOT_REGISTER_KERNEL(cpu, "ingot", SkipLayerNorm, SkipLayerNormKernel);

}  // namespace ingot
