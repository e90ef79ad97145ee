// MaxPool and AveragePool (1 to 3 spatial dims, strides, pads, auto_pad, dilations, ceil_mode,
// count_include_pad) and GlobalAveragePool / GlobalMaxPool on NCHW tensors; float32, float16,
// bfloat16. MaxPool's optional Indices output runs on the CPU. The pools only ever see NCHW:
// fuse_conv_activation makes an edge channels-last only between two FusedConvs.
#include <string>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/pool_impl.h"
#include "backends/cuda/reduce_impl.h"

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
    INGOT_CUDA_RETURN_IF_ERROR(
        launch_pool(x.dtype(), mode_, count_include_pad_, g, x.raw(), ctx.output(0).raw(), ctx.stream()));
    return Status::ok();
  }

 private:
  // The CPU kernel's geometry (Spatial::resolve with pool rules), right-aligned into 3 dims.
  Status geometry(const Shape& x, PoolGeometry& g) const {
    if (x.size() < 3 || x.size() > 5) return unsupported("input of rank " + std::to_string(x.size()) + " (1-3 spatial dims)");
    const size_t nd = x.size() - 2;
    if (sp_.kernel_shape.size() != nd) return invalid_model("kernel_shape does not match the input's spatial dims");
    Shape in(x.begin() + 2, x.end()), out;
    std::vector<int64_t> st, dl, pb, pe;
    INGOT_RETURN_IF_ERROR(sp_.resolve(in, sp_.kernel_shape, st, dl, pb, pe, out, true));
    g = PoolGeometry{};
    g.planes = x[0] * x[1];
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
};

struct MaxPoolKernel : WindowPoolKernel {
  MaxPoolKernel() : WindowPoolKernel(PoolMode::kMax) {}
};
struct AveragePoolKernel : WindowPoolKernel {
  AveragePoolKernel() : WindowPoolKernel(PoolMode::kAvg) {}
};

// Global pools are reductions of each (n, c) plane: one warp per plane for small maps.
class GlobalPoolKernel : public CudaKernel {
 public:
  explicit GlobalPoolKernel(ReduceOp op) : op_(op) {}

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
    return inputs.empty() || inputs[0].shape.size() < 3 ? 0 : reduce_workspace_bytes(geometry(inputs[0].shape));
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
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
