// LpNormalization: y = x / ||x||_p along `axis` (default -1), p = 1 (sum of |x|) or 2 (root of
// the sum of squares). A lane whose norm is 0 (every element 0) gives zeros, as ONNX Runtime
// does, rather than 0/0. The norm is summed in double; each element divided by it in the
// accumulator type (float for float16/bfloat16/float32), as ONNX Runtime divides.
#include <cmath>
#include <string>

#include "backends/cpu/float_kernel_util.h"
#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;

class LpNormalizationKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    axis_ = node.attrs.get_int("axis", -1);
    p_ = node.attrs.get_int("p", 2);
    if (p_ != 1 && p_ != 2) return invalid_model("attribute 'p' is " + std::to_string(p_) + "; expected 1 or 2");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0)) return invalid_model("needs 1 input (input)");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "input"));
    const Shape& s = ctx.input_shape(0);
    if (s.empty()) return invalid_argument("input 0 (input) is a scalar; expected rank >= 1");
    INGOT_RETURN_IF_ERROR(normalize_axis(axis_, int(s.size()), "axis").status());
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const Shape& s = x.shape();
    INGOT_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, int(s.size()), "axis"));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= s[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
    const int64_t n = s[size_t(axis)];
    if (x.numel() == 0) return Status::ok();
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // One lane a task: lanes [outer, inner], each n elements `inner` apart.
      parallel_for(outer * inner, n * 2, [&](int64_t b, int64_t e) {
        for (int64_t lane = b; lane < e; ++lane) {
          const int64_t base = lane / inner * n * inner + lane % inner;
          double norm = 0;
          for (int64_t k = 0; k < n; ++k) {
            const double v = double(px[base + k * inner]);
            norm += p_ == 1 ? std::fabs(v) : v * v;
          }
          if (p_ == 2) norm = std::sqrt(norm);
          const A d = A(norm);
          for (int64_t k = 0; k < n; ++k) py[base + k * inner] = norm != 0 ? T(A(px[base + k * inner]) / d) : T(0);
        }
      });
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = -1, p_ = 2;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", LpNormalization, LpNormalizationKernel);

}  // namespace ingot
