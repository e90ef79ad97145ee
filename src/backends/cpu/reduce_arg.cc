// ArgMax / ArgMin: int64 index of the extreme value along one axis; ties go to the first
// occurrence, or the last with select_last_index. A NaN counts as the extreme value.
#include <algorithm>
#include <cmath>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

template <bool kMax>
class ArgKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 0);
    keepdims_ = node.attrs.get_int("keepdims", 1) != 0;
    last_ = node.attrs.get_int("select_last_index", 0) != 0;
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    DType t = ctx.input_dtype(0);
    if (!dtype_is_float(t) && !dtype_is_integer(t))
      return unsupported("input dtype " + dtype_name(t) + " is not supported");
    const Shape& s = ctx.input_shape(0);
    INGOT_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, int(s.size()), "attribute 'axis' value"));
    if (s.empty()) return invalid_argument("input must have rank >= 1");
    if (s[size_t(ax)] == 0) return invalid_argument("cannot take the arg extreme of an empty axis");
    Shape out = s;
    if (keepdims_) out[size_t(ax)] = 1;
    else out.erase(out.begin() + ax);
    ctx.set_output(0, DType::kInt64, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int ax = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    Tensor& y = ctx.output(0);
    int64_t outer = 1, inner = 1, n = x.dim(ax);
    for (int i = 0; i < ax; ++i) outer *= x.dim(i);
    for (int i = ax + 1; i < x.rank(); ++i) inner *= x.dim(i);
    int64_t* out = y.data<int64_t>();
    bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;
      const T* in = x.data<T>();
      // better(a, b): a should replace the current best b.
      auto better = [&](C a, C b) -> bool {
        if (b != b) return false;  // NaN already found
        if (a != a) return true;
        if (kMax) return last_ ? a >= b : a > b;
        return last_ ? a <= b : a < b;
      };
      parallel_for(outer, n * inner, [&](int64_t b, int64_t e) {
        std::vector<C> best{}; best.resize(size_t(inner));
        for (int64_t o = b; o < e; ++o) {
          const T* base = in + o * n * inner;
          if (inner == 1) {  // contiguous scan
            C bv = C(base[0]);
            int64_t bi = 0;
            for (int64_t k = 1; k < n; ++k) {
              C v = C(base[k]);
              if (better(v, bv)) { bv = v; bi = k; }
            }
            out[o] = bi;
            continue;
          }
          int64_t* idx = out + o * inner;
          for (int64_t j = 0; j < inner; ++j) { best[size_t(j)] = C(base[j]); idx[j] = 0; }
          for (int64_t k = 1; k < n; ++k) {
            const T* row = base + k * inner;
            for (int64_t j = 0; j < inner; ++j) {
              C v = C(row[j]);
              if (better(v, best[size_t(j)])) { best[size_t(j)] = v; idx[j] = k; }
            }
          }
        }
      });
    });
    if (!ok) return unsupported("input dtype " + dtype_name(x.dtype()) + " is not supported");
    return Status::ok();
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool last_ = false;
};

using ArgMaxKernel = ArgKernel<true>;
using ArgMinKernel = ArgKernel<false>;

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", ArgMax, ArgMaxKernel);
INGOT_REGISTER_KERNEL(cpu, "", ArgMin, ArgMinKernel);

}  // namespace ingot
