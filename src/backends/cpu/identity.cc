// Identity and inference-mode Dropout: the output is the input's buffer, no copy.
#include "runtime/kernel.h"

namespace ingot {
namespace {

class IdentityKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return Status::ok();
  }
};

// Dropout at inference: output = input, optional mask = all true. A training_mode input that
// is true at run time would need randomness, which an inference engine refuses.
class DropoutKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    if (const Tensor* tm = ctx.input_value(2); tm && tm->numel() && tm->scalar_as_int() != 0) {
      return unsupported("training_mode=true needs random numbers; ingot runs Dropout in inference mode only");
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    if (ctx.has_output(1)) ctx.set_output(1, DType::kBool, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    if (ctx.has_output(1)) {
      Tensor& mask = ctx.output(1);
      bool* m = mask.data<bool>();
      for (int64_t i = 0; i < mask.numel(); ++i) m[i] = true;
    }
    return Status::ok();
  }
  bool deterministic() const override { return true; }
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Identity, IdentityKernel);
INGOT_REGISTER_KERNEL(cpu, "", Dropout, DropoutKernel);

}  // namespace ingot
