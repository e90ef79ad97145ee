// Identity and inference-mode Dropout: the output is the input's buffer, no copy.
#include "runtime/kernel.h"

namespace ingot {
namespace {

class IdentityKernel : public OpKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
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

// Dropout at inference: output = input, optional mask = all true. training_mode=true with a
// nonzero ratio is refused with the fix: a Dropout left in training mode is an export taken
// before model.eval(), not a model that means to drop activations at inference (random ops that
// a model does mean, RandomNormalLike and the like, run: random.cc). With ratio 0 it is the
// identity too.
class DropoutKernel : public OpKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    if (const Tensor* tm = ctx.input_value(2); tm && tm->numel() && tm->scalar_as_int() != 0) {
      const Tensor* ratio = ctx.input_value(1);
      double r = ratio && ratio->numel() ? ratio->scalar_as_double() : 0.5;
      if (r != 0.0) {
        return unsupported("training_mode=true with ratio " + std::to_string(r) +
                           " needs random numbers; ingot runs Dropout in inference mode only (re-export the "
                           "model after model.eval())");
      }
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
