// Ops whose output is their input's buffer under another shape (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, inference Dropout): the executor aliases the buffers and never calls
// compute(). And Shape/Size, whose outputs depend on shapes only: they are normally folded at
// plan time; when one is not, a one-block kernel writes the values it is given by value.
#include "backends/cuda/tensor_host.h"

namespace ingot::cuda {
namespace {

using namespace tensor_host;

class ViewKernel : public CudaKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)inputs;
    return dynamic_outputs_reason(outputs);
  }
  Status compute(CudaComputeContext& ctx) const override {
    return internal_error(ctx.node().op_type + " is a view: its output aliases its input and it has nothing to run");
  }
};

// Dropout's optional mask (all true at inference) would need a kernel, and views have none:
// a node that asks for it runs on the CPU.
class DropoutKernel : public ViewKernel {
 public:
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (outputs.size() > 1 && outputs[1].set) return "the mask output is requested";
    return ViewKernel::supports(inputs, outputs);
  }
};

class ShapeKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    start_ = node.attrs.get_int("start", 0);
    has_end_ = node.attrs.has("end");
    end_ = node.attrs.get_int("end", 0);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    auto [s, e] = range(int64_t(inputs[0].shape.size()));
    return rank_reason(size_t(e - s), 2 * kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Shape& in = ctx.input(0).shape();
    auto [s, e] = range(int64_t(in.size()));
    Int64Values v;
    for (int64_t i = s; i < e; ++i) v.v[i - s] = in[size_t(i)];
    return launch_result(launch_write_int64(static_cast<int64_t*>(ctx.output(0).raw()), int(e - s), v, ctx.stream()),
                         "Shape");
  }

 private:
  // The CPU kernel's [start, end) of dims, clamped to the rank.
  std::pair<int64_t, int64_t> range(int64_t r) const {
    auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    int64_t s = clampi(start_), e = has_end_ ? clampi(end_) : r;
    return {s, std::max(s, e)};
  }

  int64_t start_ = 0, end_ = 0;
  bool has_end_ = false;
};

class SizeKernel : public CudaKernel {
 public:
  Status compute(CudaComputeContext& ctx) const override {
    Int64Values v;
    v.v[0] = shape_numel(ctx.input(0).shape());
    return launch_result(launch_write_int64(static_cast<int64_t*>(ctx.output(0).raw()), 1, v, ctx.stream()), "Size");
  }
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", Reshape, ViewKernel);
INGOT_REGISTER_CUDA_KERNEL("", Flatten, ViewKernel);
INGOT_REGISTER_CUDA_KERNEL("", Squeeze, ViewKernel);
INGOT_REGISTER_CUDA_KERNEL("", Unsqueeze, ViewKernel);
INGOT_REGISTER_CUDA_KERNEL("", Identity, ViewKernel);
INGOT_REGISTER_CUDA_KERNEL("", Dropout, DropoutKernel);
INGOT_REGISTER_CUDA_KERNEL("", Shape, ShapeKernel);
INGOT_REGISTER_CUDA_KERNEL("", Size, SizeKernel);

}  // namespace ingot::cuda
