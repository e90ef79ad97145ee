// MaxPool and AveragePool (1 to 3 spatial dims, strides, pads, auto_pad, dilations, ceil_mode,
// count_include_pad) and GlobalAveragePool / GlobalMaxPool; float32, float16, bfloat16.
// MaxPool's optional Indices output runs on the CPU. Layouts as on the CPU (see
// src/backends/cpu/pool.cc): NCHW, or channels-last where fuse_conv_activation set
// `channels_last` (window pools: input and output) or `x_channels_last` (global pools: input).
#include <string>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/pool_impl.h"
#include "backends/cuda/reduce_impl.h"
#include "ir/shape_util.h"

namespace ingot::cuda {
namespace {

using dnnl_util::Spatial;

bool is_float_dtype(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

class WindowPoolKernel : public CudaKernel {
 public:
  explicit WindowPoolKernel(PoolMode m) : mode_(m) {}

  Status init(const Node& node, int opset) override {
    (void)opset;
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    if (sp_.kernel_shape.empty()) return invalid_model("attribute kernel_shape is required");
    count_include_pad_ = node.attrs.get_int("count_include_pad", 0) != 0;
    channels_last_ = node.attrs.get_int("channels_last", 0) != 0;
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (outputs.size() > 1 && outputs[1].set) return "the Indices output";
    if (inputs.empty() || !inputs[0].present) return "needs an input";
    if (!is_float_dtype(inputs[0].dtype)) return "dtype " + dtype_name(inputs[0].dtype) + " (float types only)";
    PoolGeometry g;
    Status s = geometry(inputs[0].shape, g);
    return s.is_ok() ? std::string() : s.message();
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    PoolGeometry g;
    INGOT_RETURN_IF_ERROR(geometry(x.shape(), g));
    INGOT_CUDA_RETURN_IF_ERROR(launch_pool(x.dtype(), mode_, count_include_pad_, channels_last_, g, x.raw(),
                                           ctx.output(0).raw(), ctx.stream()));
    return Status::ok();
  }

 private:
  // The CPU kernel's geometry (Spatial::resolve with pool rules), right-aligned into 3 dims.
  Status geometry(const Shape& stored, PoolGeometry& g) const {
    if (stored.size() < 3 || stored.size() > 5)
      return unsupported("input of rank " + std::to_string(stored.size()) + " (1-3 spatial dims)");
    const Shape x = channels_first_shape(stored, channels_last_);
    const size_t nd = x.size() - 2;
    if (sp_.kernel_shape.size() != nd) return invalid_model("kernel_shape does not match the input's spatial dims");
    Shape in(x.begin() + 2, x.end()), out;
    std::vector<int64_t> st, dl, pb, pe;
    INGOT_RETURN_IF_ERROR(sp_.resolve(in, sp_.kernel_shape, st, dl, pb, pe, out, true));
    g = PoolGeometry{};
    g.n = x[0], g.c = x[1];
    for (size_t i = 0; i < nd; ++i) {
      const size_t d = 3 - nd + i;
      g.in[d] = in[i], g.out[d] = out[i], g.k[d] = sp_.kernel_shape[i];
      g.st[d] = st[i], g.dl[d] = dl[i], g.pb[d] = pb[i], g.pe[d] = pe[i];
    }
    return Status::ok();
  }

  PoolMode mode_;
  Spatial sp_;
  bool count_include_pad_ = false;
  bool channels_last_ = false;
};

struct MaxPoolKernel : WindowPoolKernel {
  MaxPoolKernel() : WindowPoolKernel(PoolMode::kMax) {}
};
struct AveragePoolKernel : WindowPoolKernel {
  AveragePoolKernel() : WindowPoolKernel(PoolMode::kAvg) {}
};

// Global pools of NCHW input are reductions of each (n, c) plane: one warp per plane for small
// maps. Channels-last input ([N, spatial..., C]) has its own kernel, which reads whole pixels.
class GlobalPoolKernel : public CudaKernel {
 public:
  explicit GlobalPoolKernel(ReduceOp op) : op_(op) {}

  Status init(const Node& node, int opset) override {
    (void)opset;
    x_channels_last_ = node.attrs.get_int("x_channels_last", 0) != 0;
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (inputs.empty() || !inputs[0].present) return "needs an input";
    if (!is_float_dtype(inputs[0].dtype)) return "dtype " + dtype_name(inputs[0].dtype) + " (float types only)";
    if (inputs[0].shape.size() < 3) return "input of rank < 3";
    if (shape_numel(inputs[0].shape) == 0) return "empty input";
    return {};
  }

  size_t workspace_bytes(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (x_channels_last_ || inputs.empty() || inputs[0].shape.size() < 3) return 0;
    return reduce_workspace_bytes(geometry(inputs[0].shape));
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x_channels_last_) {
      const Shape l = channels_first_shape(x.shape(), true);
      const int64_t n = l[0], c = l[1], spatial = shape_numel(l) / (n * c);
      const PoolMode mode = op_ == ReduceOp::kMax ? PoolMode::kMax : PoolMode::kAvg;
      INGOT_CUDA_RETURN_IF_ERROR(
          launch_global_pool_channels_last(x.dtype(), mode, n, spatial, c, x.raw(), ctx.output(0).raw(), ctx.stream()));
      return Status::ok();
    }
    const ReduceGeometry g = geometry(x.shape());
    if (ctx.workspace_bytes() < reduce_workspace_bytes(g)) return internal_error("global pool: workspace too small");
    INGOT_CUDA_RETURN_IF_ERROR(launch_reduce(x.dtype(), op_, g, x.raw(), ctx.output(0).raw(), ctx.workspace(), ctx.stream()));
    return Status::ok();
  }

 private:
  static ReduceGeometry geometry(const Shape& x) {
    ReduceGeometry g;
    const int64_t planes = x[0] * x[1], len = shape_numel(x) / planes;
    g.num_out = planes;
    g.count = len;
    g.inner = len;
    g.inner_reduced = true;
    g.nkept = 1;
    g.kept_dims[0] = planes;
    g.kept_strides[0] = len;
    return g;
  }

  ReduceOp op_;
  bool x_channels_last_ = false;
};

struct GlobalAveragePoolKernel : GlobalPoolKernel {
  GlobalAveragePoolKernel() : GlobalPoolKernel(ReduceOp::kMean) {}
};
struct GlobalMaxPoolKernel : GlobalPoolKernel {
  GlobalMaxPoolKernel() : GlobalPoolKernel(ReduceOp::kMax) {}
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", MaxPool, MaxPoolKernel);
INGOT_REGISTER_CUDA_KERNEL("", AveragePool, AveragePoolKernel);
INGOT_REGISTER_CUDA_KERNEL("", GlobalAveragePool, GlobalAveragePoolKernel);
INGOT_REGISTER_CUDA_KERNEL("", GlobalMaxPool, GlobalMaxPoolKernel);

}  // namespace ingot::cuda
