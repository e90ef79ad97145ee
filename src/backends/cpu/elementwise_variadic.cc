// Variadic elementwise ops with multidirectional broadcasting: Min, Max, Sum, Mean. The first
// pair is combined into the output, then each further input is folded into it in place.
// Lets GCC if-convert and vectorise comparisons/floor in the loops below; ingot never
// inspects floating-point exception flags, so results are unchanged.
#include "backends/cpu/elementwise_util.h"

namespace ingot {
namespace {

using namespace ew;

// Min/Max propagate NaN from either side, as numpy's minimum/maximum do.
struct MinOp {
  static constexpr Types kTypes = Types::kNumeric;
  template <class C> C operator()(C a, C b) const { return (a < b || a != a) ? a : b; }
};
struct MaxOp {
  static constexpr Types kTypes = Types::kNumeric;
  template <class C> C operator()(C a, C b) const { return (a > b || a != a) ? a : b; }
};
struct SumOp {
  static constexpr Types kTypes = Types::kFloat;
  template <class C> C operator()(C a, C b) const { return a + b; }
};

template <class Op, bool kMean>
class VariadicKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 1) return invalid_model("needs at least 1 input");
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return invalid_model("input " + std::to_string(i) + " is missing");
      if (i == 0) INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "", Op::kTypes));
      else INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, i, "", 0, ""));
      shapes.push_back(ctx.input_shape(i));
    }
    INGOT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(shapes));
    ctx.set_output(0, ctx.input_dtype(0), std::move(s));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const int n = ctx.num_inputs();
    if (n == 1) {
      ctx.set_output(0, ctx.input(0));
      return Status::ok();
    }
    Tensor& out = ctx.output(0);
    bool ok = dispatch_set<Op::kTypes>(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_compute<T, T, T>(ctx.input(0), ctx.input(1), out, Op{});
      for (int i = 2; i < n; ++i) binary_compute<T, T, T>(out, ctx.input(i), out, Op{});
      if constexpr (kMean) {
        using C = compute_t<T>;
        const C d = C(n);
        unary_compute<T, T>(out, out, [d](C x) { return x / d; });
      }
    });
    if (!ok) return dtype_error(0, "", out.dtype(), Op::kTypes);
    return Status::ok();
  }
};

using MinKernel = VariadicKernel<MinOp, false>;
using MaxKernel = VariadicKernel<MaxOp, false>;
using SumKernel = VariadicKernel<SumOp, false>;
using MeanKernel = VariadicKernel<SumOp, true>;

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Min, MinKernel);
INGOT_REGISTER_KERNEL(cpu, "", Max, MaxKernel);
INGOT_REGISTER_KERNEL(cpu, "", Sum, SumKernel);
INGOT_REGISTER_KERNEL(cpu, "", Mean, MeanKernel);

}  // namespace ingot
