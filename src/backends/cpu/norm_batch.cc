// BatchNormalization and InstanceNormalization: per-channel affine normalisation of
// X [N, C, D1, ...].
//   BatchNormalization (inference): y = scale * (x - mean) / sqrt(var + eps) + B, with the
//     running statistics given as inputs. training_mode=1 (opset 14+) normalises with the
//     batch statistics and also returns the updated running mean/var.
//   InstanceNormalization: statistics per (n, c) over the spatial dims.
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

// X must be [N, C, ...]; returns C and the spatial size.
Status check_nc(const InferContext& ctx, int64_t* c, int64_t* spatial) {
  const Shape& s = ctx.input_shape(0);
  if (s.size() < 2) {
    return invalid_argument("input 0 (X) has shape " + shape_str(s) + "; expected rank >= 2 ([N, C, ...])");
  }
  *c = s[1];
  *spatial = 1;
  for (size_t i = 2; i < s.size(); ++i) *spatial *= s[i];
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------

class BatchNormKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    momentum_ = node.attrs.get_float("momentum", 0.9f);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    spatial_ = opset < 9 ? node.attrs.get_int("spatial", 1) != 0 : true;
    training_ = opset >= 14 && node.attrs.get_int("training_mode", 0) != 0;
    if (opset < 7 && node.attrs.get_int("is_test", 0) == 0 && node.outputs.size() > 1) {
      return unsupported("is_test=0 (training) BatchNormalization is not supported; ingot runs inference only");
    }
    if (!training_) {
      for (size_t i = 1; i < node.outputs.size(); ++i) {
        if (node.outputs[i] != kNoValue) {
          return unsupported("output " + std::to_string(i) +
                             " (a training statistic) is requested but training_mode is 0; "
                             "ingot computes training statistics only for opset 14+ with training_mode=1");
        }
      }
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; ++i) {
      if (!ctx.has_input(i)) return invalid_model(std::string("input ") + std::to_string(i) + " (" + names[i] + ") is missing");
      INGOT_RETURN_IF_ERROR(check_float(ctx, i, names[i]));
    }
    int64_t c = 0, sp = 0;
    INGOT_RETURN_IF_ERROR(check_nc(ctx, &c, &sp));
    for (int i = 1; i < 5; ++i) {
      int64_t n = shape_numel(ctx.input_shape(i));
      bool ok = ctx.input_rank(i) == 1 && n == c;
      if (!spatial_) ok = ok || n == c * sp;
      if (!ok) {
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " +
                                shape_str(ctx.input_shape(i)) + ", expected " + std::to_string(c) +
                                " (the channel dim of X)");
      }
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    if (training_) {
      if (ctx.has_output(1)) ctx.set_output(1, ctx.input_dtype(3), ctx.input_shape(3));
      if (ctx.has_output(2)) ctx.set_output(2, ctx.input_dtype(4), ctx.input_shape(4));
    }
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t n = x.dim(0), c = x.dim(1);
    const int64_t sp = x.numel() / std::max<int64_t>(n * c, 1);
    std::vector<double> scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
    std::vector<double> mean = to_doubles(ctx.input(3)), var = to_doubles(ctx.input(4));
    const bool per_elem = int64_t(scale.size()) != c;  // spatial=0 with [C, D1, ...] params
    if (per_elem && (mean.size() != scale.size() || bias.size() != scale.size() || var.size() != scale.size())) {
      return invalid_argument("spatial=0 needs scale, B, mean and var all of shape [C, D1, ...]");
    }
    if (training_) {
      // Batch statistics per channel (population variance), then the running-stat updates.
      std::vector<double> bm(static_cast<size_t>(c), 0.0), bv(static_cast<size_t>(c), 0.0);
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        parallel_for(c, n * sp * 2, [&](int64_t b, int64_t e) {
          for (int64_t ch = b; ch < e; ++ch) {
            double s = 0, s2 = 0;
            for (int64_t in = 0; in < n; ++in) {
              const T* p = px + (in * c + ch) * sp;
              for (int64_t k = 0; k < sp; ++k) s += double(p[k]);
            }
            double cnt = double(std::max<int64_t>(n * sp, 1));
            double m = s / cnt;
            for (int64_t in = 0; in < n; ++in) {
              const T* p = px + (in * c + ch) * sp;
              for (int64_t k = 0; k < sp; ++k) { double d = double(p[k]) - m; s2 += d * d; }
            }
            bm[size_t(ch)] = m;
            bv[size_t(ch)] = s2 / cnt;
          }
        });
      });
      auto store = [&](int out, const std::vector<double>& run, const std::vector<double>& cur) {
        if (!ctx.has_output(out)) return;
        Tensor& t = ctx.output(out);
        dispatch_float(t.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          for (int64_t i = 0; i < c; ++i)
            t.data<T>()[i] = T(run[size_t(i)] * double(momentum_) + cur[size_t(i)] * (1.0 - double(momentum_)));
        });
      };
      store(1, mean, bm);
      store(2, var, bv);
      mean = std::move(bm);
      var = std::move(bv);
    }
    // Fold into y = x * a + b per channel (or per element for spatial=0).
    size_t np = mean.size();
    std::vector<float> a(np), b(np);
    std::vector<double> ad(np), bd(np);
    for (size_t i = 0; i < np; ++i) {
      double inv = 1.0 / std::sqrt(var[i] + double(epsilon_));
      ad[i] = scale[i] * inv;
      bd[i] = bias[i] - mean[i] * ad[i];
      a[i] = float(ad[i]);
      b[i] = float(bd[i]);
    }
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(n * c, sp, [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          int64_t ch = r % c;
          const T* p = px + r * sp;
          T* q = py + r * sp;
          if (per_elem) {
            for (int64_t k = 0; k < sp; ++k) {
              size_t pi = size_t(ch * sp + k);
              if constexpr (std::is_same_v<A, double>) q[k] = T(double(p[k]) * ad[pi] + bd[pi]);
              else q[k] = T(A(p[k]) * a[pi] + b[pi]);
            }
          } else {
            A sa, sb;
            if constexpr (std::is_same_v<A, double>) { sa = ad[size_t(ch)]; sb = bd[size_t(ch)]; }
            else { sa = a[size_t(ch)]; sb = b[size_t(ch)]; }
            for (int64_t k = 0; k < sp; ++k) q[k] = T(A(p[k]) * sa + sb);
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  int opset_ = 15;
  float epsilon_ = 1e-5f, momentum_ = 0.9f;
  bool spatial_ = true, training_ = false;
};

// ---------------------------------------------------------------------------------------------

class InstanceNormKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"input", "scale", "B"};
    for (int i = 0; i < 3; ++i) {
      if (!ctx.has_input(i)) return invalid_model(std::string("input ") + std::to_string(i) + " (" + names[i] + ") is missing");
      INGOT_RETURN_IF_ERROR(check_float(ctx, i, names[i]));
    }
    int64_t c = 0, sp = 0;
    INGOT_RETURN_IF_ERROR(check_nc(ctx, &c, &sp));
    for (int i = 1; i < 3; ++i) {
      if (ctx.input_rank(i) != 1 || ctx.input_shape(i)[0] != c) {
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " +
                                shape_str(ctx.input_shape(i)) + ", expected " + std::to_string(c) +
                                " (the channel dim of input)");
      }
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t n = x.dim(0), c = x.dim(1);
    const int64_t sp = n * c == 0 ? 0 : x.numel() / (n * c);
    std::vector<double> scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(n * c, sp * 4, [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          int64_t ch = r % c;
          const T* p = px + r * sp;
          T* q = py + r * sp;
          // Two passes in the accumulator type; double for the sums keeps long rows exact.
          double s = 0;
          for (int64_t k = 0; k < sp; ++k) s += double(p[k]);
          double m = sp ? s / double(sp) : 0.0;
          double s2 = 0;
          for (int64_t k = 0; k < sp; ++k) { double d = double(p[k]) - m; s2 += d * d; }
          double var = sp ? s2 / double(sp) : 0.0;
          double a = scale[size_t(ch)] / std::sqrt(var + double(epsilon_));
          A sa = A(a), sb = A(bias[size_t(ch)] - m * a);
          for (int64_t k = 0; k < sp; ++k) q[k] = T(A(p[k]) * sa + sb);
        }
      });
    });
    return Status::ok();
  }

 private:
  float epsilon_ = 1e-5f;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", BatchNormalization, BatchNormKernel);
INGOT_REGISTER_KERNEL(cpu, "", InstanceNormalization, InstanceNormKernel);

}  // namespace ingot
