// Cast and CastLike between every pair of storable dtypes: float -> int truncates toward zero
// (NaN -> 0), anything -> bool is "!= 0", float16/bfloat16 round to nearest even. Opset 19's
// 'saturate' attribute only concerns float8 types, which ingot does not store.
// Lets GCC if-convert and vectorise comparisons/floor in the loops below; ingot never
// inspects floating-point exception flags, so results are unchanged.
#include "backends/cpu/elementwise_util.h"

namespace ingot {
namespace {

using namespace ew;

Status cast_into(const Tensor& in, Tensor& out) {
  bool ok = dispatch_all(in.dtype(), [&](auto itag) {
    using TI = typename decltype(itag)::type;
    dispatch_all(out.dtype(), [&](auto otag) {
      using TO = typename decltype(otag)::type;
      const TI* x = in.data<TI>();
      TO* y = out.data<TO>();
      parallel_for(in.numel(), 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = convert<TO>(x[i]);
      });
    });
  });
  if (!ok) return unsupported("cannot cast from " + dtype_name(in.dtype()));
  return Status::ok();
}

Status check_target(DType t, const std::string& what) {
  if (!dtype_is_supported(t))
    return unsupported(what + " " + dtype_name(t) + " is not a dtype ingot can store");
  return Status::ok();
}

class CastKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    if (!node.attrs.has("to")) return invalid_model("attribute 'to' is required");
    int64_t to = node.attrs.get_int("to", 0);
    if (to <= 0 || to > 16 || to == 8) {
      if (to == 8) return unsupported("attribute 'to' = 8 (string): string tensors are not supported");
      if (to >= 17 && to <= 25) return unsupported("attribute 'to' = " + std::to_string(to) + " (float8/int4) is not supported");
      return invalid_model("attribute 'to' = " + std::to_string(to) + " is not a valid ONNX data type");
    }
    to_ = DType(to);
    return check_target(to_, "attribute 'to' =");
  }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("missing required input 0 (input)");
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "input", Types::kAll));
    ctx.set_output(0, to_, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.dtype() == to_) {
      ctx.set_output(0, in);
      return Status::ok();
    }
    return cast_into(in, ctx.output(0));
  }

 private:
  DType to_ = DType::kFloat32;
};

class CastLikeKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    static const char* const names[] = {"input", "target_type"};
    INGOT_RETURN_IF_ERROR(require_inputs(ctx, 2, names));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "input", Types::kAll));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 1, "target_type", Types::kAll));
    ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.dtype() == ctx.input(1).dtype()) {
      ctx.set_output(0, in);
      return Status::ok();
    }
    return cast_into(in, ctx.output(0));
  }
  bool reads_input_data(int input) const override { return input != 1; }
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Cast, CastKernel);
INGOT_REGISTER_KERNEL(cpu, "", CastLike, CastLikeKernel);

}  // namespace ingot
