// Softmax, LogSoftmax and Hardmax, each an [outer, n, inner] problem (ir/softmax_axis.h: how
// `axis` splits the input, before opset 13 and from it on): reduce over n for each (outer, inner).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "ir/softmax_axis.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::to_doubles;

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

template <SoftmaxKind K>
class SoftmaxFamilyKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_.init(node, opset);
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input (input)");
    if (!dtype_is_float(ctx.input_dtype(0))) {
      return invalid_argument("input 0 (input) has dtype " + dtype_name(ctx.input_dtype(0)) +
                              "; expected float16, bfloat16, float32 or float64");
    }
    auto sp = axis_.split(ctx.input_shape(0));
    if (!sp) return sp.status();
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    auto sp = axis_.split(x.shape());
    if (!sp) return sp.status();
    Tensor& y = ctx.output(0);
    bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      run<T>(x.data<T>(), y.data<T>(), *sp);
    });
    if (!ok) return invalid_argument("unsupported dtype " + dtype_name(x.dtype()));
    return Status::ok();
  }

 private:
  template <class T>
  static void run(const T* x, T* y, SoftmaxSplit sp) {
    using A = AccOf<T>;
    const int64_t n = sp.n, inner = sp.inner;
    if (n == 0 || sp.outer == 0 || inner == 0) return;
    if (inner == 1) {
      parallel_for(sp.outer, n * 8, [&](int64_t b, int64_t e) {
        std::vector<A> buf(static_cast<size_t>(n));
        for (int64_t o = b; o < e; ++o) {
          const T* xr = x + o * n;
          T* yr = y + o * n;
          A mx = -std::numeric_limits<A>::infinity();
          int64_t arg = 0;
          for (int64_t i = 0; i < n; ++i) {
            A v = A(xr[i]);
            buf[size_t(i)] = v;
            if (v > mx) { mx = v; arg = i; }
          }
          if constexpr (K == SoftmaxKind::kHardmax) {
            for (int64_t i = 0; i < n; ++i) yr[i] = T(A(0));
            yr[arg] = T(A(1));
          } else {
            A sum = 0;
            for (int64_t i = 0; i < n; ++i) {
              A e2 = std::exp(buf[size_t(i)] - mx);
              sum += e2;
              if constexpr (K == SoftmaxKind::kSoftmax) buf[size_t(i)] = e2;
            }
            if constexpr (K == SoftmaxKind::kSoftmax) {
              A inv = A(1) / sum;
              for (int64_t i = 0; i < n; ++i) yr[i] = T(buf[size_t(i)] * inv);
            } else {
              A lse = mx + std::log(sum);
              for (int64_t i = 0; i < n; ++i) yr[i] = T(buf[size_t(i)] - lse);
            }
          }
        }
      });
      return;
    }
    // Strided case: vectorise over `inner`, keep per-column running max / sum.
    parallel_for(sp.outer, n * inner * 8, [&](int64_t b, int64_t e) {
      std::vector<A> mx(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
      std::vector<int64_t> arg(static_cast<size_t>(inner));
      for (int64_t o = b; o < e; ++o) {
        const T* xo = x + o * n * inner;
        T* yo = y + o * n * inner;
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<A>::infinity());
        std::fill(arg.begin(), arg.end(), 0);
        for (int64_t i = 0; i < n; ++i) {
          const T* xr = xo + i * inner;
          for (int64_t j = 0; j < inner; ++j) {
            A v = A(xr[j]);
            if (v > mx[size_t(j)]) { mx[size_t(j)] = v; arg[size_t(j)] = i; }
          }
        }
        if constexpr (K == SoftmaxKind::kHardmax) {
          for (int64_t i = 0; i < n; ++i) {
            T* yr = yo + i * inner;
            for (int64_t j = 0; j < inner; ++j) yr[j] = T(A(arg[size_t(j)] == i ? 1 : 0));
          }
        } else {
          std::fill(sum.begin(), sum.end(), A(0));
          for (int64_t i = 0; i < n; ++i) {
            const T* xr = xo + i * inner;
            T* yr = yo + i * inner;
            for (int64_t j = 0; j < inner; ++j) {
              A e2 = std::exp(A(xr[j]) - mx[size_t(j)]);
              sum[size_t(j)] += e2;
              if constexpr (K == SoftmaxKind::kSoftmax) yr[j] = T(e2);
            }
          }
          if constexpr (K == SoftmaxKind::kSoftmax) {
            for (int64_t j = 0; j < inner; ++j) sum[size_t(j)] = A(1) / sum[size_t(j)];
            for (int64_t i = 0; i < n; ++i) {
              T* yr = yo + i * inner;
              // Re-read the stored exponentials; for reduced-precision T recompute to stay exact.
              if constexpr (std::is_same_v<T, A>) {
                for (int64_t j = 0; j < inner; ++j) yr[j] *= sum[size_t(j)];
              } else {
                const T* xr = xo + i * inner;
                for (int64_t j = 0; j < inner; ++j)
                  yr[j] = T(std::exp(A(xr[j]) - mx[size_t(j)]) * sum[size_t(j)]);
              }
            }
          } else {
            for (int64_t j = 0; j < inner; ++j) sum[size_t(j)] = mx[size_t(j)] + std::log(sum[size_t(j)]);
            for (int64_t i = 0; i < n; ++i) {
              const T* xr = xo + i * inner;
              T* yr = yo + i * inner;
              for (int64_t j = 0; j < inner; ++j) yr[j] = T(A(xr[j]) - sum[size_t(j)]);
            }
          }
        }
      }
    });
  }

  SoftmaxAxis axis_;
};

using SoftmaxKernel = SoftmaxFamilyKernel<SoftmaxKind::kSoftmax>;
using LogSoftmaxKernel = SoftmaxFamilyKernel<SoftmaxKind::kLogSoftmax>;
using HardmaxKernel = SoftmaxFamilyKernel<SoftmaxKind::kHardmax>;

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Softmax, SoftmaxKernel);
INGOT_REGISTER_KERNEL(cpu, "", LogSoftmax, LogSoftmaxKernel);
INGOT_REGISTER_KERNEL(cpu, "", Hardmax, HardmaxKernel);

}  // namespace ingot
