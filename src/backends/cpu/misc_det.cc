// Det: determinant of square matrices [*, M, M] by LU decomposition with partial pivoting,
// computed in double.
#include <cmath>

#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

double det_lu(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t c = 0; c < m; ++c) {
    int64_t piv = c;
    double best = std::fabs(a[size_t(c * m + c)]);
    for (int64_t r = c + 1; r < m; ++r) {
      double v = std::fabs(a[size_t(r * m + c)]);
      if (v > best) { best = v; piv = r; }
    }
    if (best == 0.0) {
      // Singular unless a NaN is hiding in the column.
      for (int64_t r = c; r < m; ++r)
        if (std::isnan(a[size_t(r * m + c)])) return NAN;
      return 0.0;
    }
    if (piv != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(c * m + k)], a[size_t(piv * m + k)]);
      det = -det;
    }
    const double d = a[size_t(c * m + c)];
    det *= d;
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[size_t(r * m + c)] / d;
      if (f == 0.0) continue;
      for (int64_t k = c + 1; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(c * m + k)];
    }
  }
  return det;
}

class DetKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    DType t = ctx.input_dtype(0);
    if (!dtype_is_float(t)) return unsupported("input dtype " + dtype_name(t) + " is not supported");
    const Shape& s = ctx.input_shape(0);
    if (s.size() < 2) return invalid_argument("input must have rank >= 2, got rank " + std::to_string(s.size()));
    if (s[s.size() - 1] != s[s.size() - 2])
      return invalid_argument("input must hold square matrices, got shape " + shape_str(s));
    ctx.set_output(0, t, Shape(s.begin(), s.end() - 2));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t m = x.dim(x.rank() - 1), batch = y.numel();
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(batch, m * m * m, [&](int64_t b, int64_t e) {
        std::vector<double> a(static_cast<size_t>(m * m));
        for (int64_t i = b; i < e; ++i) {
          for (int64_t k = 0; k < m * m; ++k) a[size_t(k)] = double(in[i * m * m + k]);
          const double d = det_lu(a, m);
          if constexpr (std::is_same_v<T, double>) out[i] = d;
          else out[i] = T(float(d));
        }
      });
    });
    return Status::ok();
  }
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Det, DetKernel);

}  // namespace ingot
