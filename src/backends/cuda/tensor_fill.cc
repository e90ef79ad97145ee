// Ops that make or mask tensors from scalars and shapes: ConstantOfShape, Range, EyeLike,
// Trilu, and CumSum (a scan along one axis).
#include "backends/cuda/tensor_host.h"

namespace ingot::cuda {
namespace {

using namespace tensor_host;

// ---------------------------------------------------------------- ConstantOfShape
class ConstantOfShapeKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    if (const Tensor* t = node.attrs.get_tensor("value")) value_bits_ = first_element_bits(*t);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)inputs;
    return dynamic_outputs_reason(outputs);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    Tensor& y = ctx.output(0);
    return launch_result(launch_fill(y.raw(), dtype_size(y.dtype()), y.numel(), value_bits_, ctx.stream()),
                         "ConstantOfShape");
  }

 private:
  uint64_t value_bits_ = 0;  // the default is float32 zero
};

// ---------------------------------------------------------------- Range
class RangeKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    DType t = inputs[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat64 && t != DType::kFloat16 && t != DType::kBFloat16 &&
        t != DType::kInt32 && t != DType::kInt64)
      return "dtype " + dtype_name(t);
    if (std::string r = host_value_reason(inputs, 0, "start"); !r.empty()) return r;
    if (std::string r = host_value_reason(inputs, 2, "delta"); !r.empty()) return r;
    return dynamic_outputs_reason(outputs);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor* s = ctx.host_value(0);
    const Tensor* d = ctx.host_value(2);
    if (!s || !d) return internal_error("Range: start and delta must be known on the host");
    Tensor& y = ctx.output(0);
    return launch_result(launch_range(y.raw(), y.dtype(), y.numel(), s->scalar_as_double(), d->scalar_as_double(),
                                      s->scalar_as_int(), d->scalar_as_int(), ctx.stream()),
                         "Range");
  }
};

// ---------------------------------------------------------------- EyeLike
class EyeLikeKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    k_ = node.attrs.get_int("k", 0);
    return Status::ok();
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    Tensor& y = ctx.output(0);
    return launch_result(
        launch_eye(y.raw(), dtype_size(y.dtype()), y.dim(0), y.dim(1), k_, element_bits(y.dtype(), 1.0), ctx.stream()),
        "EyeLike");
  }

 private:
  int64_t k_ = 0;
};

// ---------------------------------------------------------------- Trilu
class TriluKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    upper_ = node.attrs.get_int("upper", 1) != 0;
    return Status::ok();
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    const int64_t n = x.dim(r - 2), m = x.dim(r - 1);
    const int64_t mats = n * m > 0 ? x.numel() / (n * m) : 0;
    // k: its host value when known, else read on the device; absent means 0.
    int64_t k_host = 0;
    const int64_t* k_device = nullptr;
    if (ctx.has_input(1)) {
      if (const Tensor* hv = ctx.host_value(1))
        k_host = hv->scalar_as_int();
      else
        k_device = static_cast<const int64_t*>(ctx.input(1).raw());
    }
    return launch_result(launch_trilu(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), mats, n, m, upper_, k_host,
                                      k_device, ctx.stream()),
                         "Trilu");
  }

 private:
  bool upper_ = true;
};

// ---------------------------------------------------------------- CumSum
class CumSumKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    exclusive_ = node.attrs.get_int("exclusive", 0) != 0;
    reverse_ = node.attrs.get_int("reverse", 0) != 0;
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    DType t = inputs[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16 && t != DType::kInt32 &&
        t != DType::kInt64)
      return "dtype " + dtype_name(t);
    return host_value_reason(inputs, 1, "axis");
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor* axis = ctx.host_value(1);
    if (!axis) return internal_error("CumSum: the axis must be known on the host");
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis->scalar_as_int(), x.rank()));
    return launch_result(
        launch_cumsum(x.raw(), ctx.output(0).raw(), x.dtype(), prod(x.shape(), 0, size_t(a)), x.dim(a),
                      prod(x.shape(), size_t(a) + 1, size_t(x.rank())), exclusive_, reverse_, ctx.stream()),
        "CumSum");
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", ConstantOfShape, ConstantOfShapeKernel);
INGOT_REGISTER_CUDA_KERNEL("", Range, RangeKernel);
INGOT_REGISTER_CUDA_KERNEL("", EyeLike, EyeLikeKernel);
INGOT_REGISTER_CUDA_KERNEL("", Trilu, TriluKernel);
INGOT_REGISTER_CUDA_KERNEL("", CumSum, CumSumKernel);

}  // namespace ingot::cuda
