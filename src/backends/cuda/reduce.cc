// ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/SumSquare over any axes (attribute or, from opset
// 18 (13 for ReduceSum), a constant input), keepdims, noop_with_empty_axes; and
// BatchNormalization in inference mode, a per-channel affine (kept here as the other
// per-channel statistics op; its parameters fold to scale/shift once when they are constants).
// float32, float16, bfloat16; float32 accumulation. Integer reductions run on the CPU.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/reduce_impl.h"

namespace ingot::cuda {
namespace {

bool is_float_dtype(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// The CPU kernel's collapsed iteration space (reduce.cc's make_plan): runs of reduced and kept
// axes with axes of size 1 dropped.
Status make_geometry(const Shape& in, const std::vector<int64_t>& axes, bool noop, ReduceGeometry& g) {
  const int rank = int(in.size());
  std::vector<bool> red(size_t(rank), false);
  if (axes.empty()) {
    if (!noop) red.assign(size_t(rank), true);
  } else {
    for (int64_t a : axes) {
      if (a < -rank || a >= rank)
        return invalid_argument("axes value " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
      const size_t ax = size_t(a < 0 ? a + rank : a);
      if (red[ax]) return invalid_argument("axes value " + std::to_string(a) + " is repeated");
      red[ax] = true;
    }
  }
  std::vector<int64_t> dims;
  std::vector<bool> flags;
  for (int i = 0; i < rank; ++i) {
    if (in[size_t(i)] == 1) continue;
    if (!flags.empty() && flags.back() == red[size_t(i)]) dims.back() *= in[size_t(i)];
    else dims.push_back(in[size_t(i)]), flags.push_back(red[size_t(i)]);
  }
  if (dims.empty()) dims.push_back(1), flags.push_back(false);
  const size_t m = dims.size();
  std::vector<int64_t> strides(m, 1);
  for (size_t i = m - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  g = ReduceGeometry{};
  g.inner_reduced = flags.back();
  g.inner = dims.back();
  g.count = 1;
  g.num_out = 1;
  for (size_t i = 0; i < m; ++i) (flags[i] ? g.count : g.num_out) *= dims[i];
  for (size_t i = 0; i + 1 < m; ++i) {
    int& n = flags[i] ? g.nred : g.nkept;
    if (n == kMaxReduceRuns) return unsupported("more than " + std::to_string(kMaxReduceRuns) + " alternating runs of axes");
    (flags[i] ? g.red_dims : g.kept_dims)[n] = dims[i];
    (flags[i] ? g.red_strides : g.kept_strides)[n] = strides[i];
    ++n;
  }
  return Status::ok();
}

template <ReduceOp Op>
class ReduceKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    // keepdims only shapes the output, which infer() already gave.
    axes_as_input_ = opset >= (Op == ReduceOp::kSum ? 13 : 18);
    if (axes_as_input_) noop_ = node.attrs.get_int("noop_with_empty_axes", 0) != 0;
    else axes_ = node.attrs.get_ints("axes");
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (inputs.empty() || !inputs[0].present) return "needs an input";
    if (!is_float_dtype(inputs[0].dtype)) return "dtype " + dtype_name(inputs[0].dtype) + " (float types only)";
    if (shape_numel(inputs[0].shape) == 0) return "empty input";
    std::vector<int64_t> axes;
    ReduceGeometry g;
    Status s = geometry(inputs, nullptr, axes, g);
    return s.is_ok() ? std::string() : s.message();
  }

  size_t workspace_bytes(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    std::vector<int64_t> axes;
    ReduceGeometry g;
    return geometry(inputs, nullptr, axes, g).is_ok() ? reduce_workspace_bytes(g) : 0;
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::vector<InputMeta> metas = {InputMeta{true, x.dtype(), x.shape(), nullptr}};
    if (ctx.has_input(1)) metas.push_back(InputMeta{true, ctx.input(1).dtype(), ctx.input(1).shape(), nullptr});
    std::vector<int64_t> axes;
    ReduceGeometry g;
    INGOT_RETURN_IF_ERROR(geometry(metas, ctx.has_input(1) ? ctx.host_value(1) : nullptr, axes, g));
    if (axes.empty() && noop_) {  // the output is the input
      if (y.raw() != x.raw() && x.nbytes())
        INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
      return Status::ok();
    }
    if (ctx.workspace_bytes() < reduce_workspace_bytes(g)) return internal_error("reduction: workspace too small");
    INGOT_CUDA_RETURN_IF_ERROR(launch_reduce(x.dtype(), Op, g, x.raw(), y.raw(), ctx.workspace(), ctx.stream()));
    return Status::ok();
  }

 private:
  // The axes (attribute, or the input's value: `axes_value` at run time, the meta's at plan
  // time) and the collapsed geometry.
  Status geometry(const std::vector<InputMeta>& in, const Tensor* axes_value, std::vector<int64_t>& axes,
                  ReduceGeometry& g) const {
    axes = axes_;
    if (axes_as_input_ && in.size() > 1 && in[1].present) {
      const Tensor* a = axes_value ? axes_value : in[1].value;
      if (!a) return unsupported("axes known only at run time");
      if (a->dtype() != DType::kInt64 || a->rank() > 1) return unsupported("axes input is not a 1-D int64 tensor");
      axes = a->to_int_vector();
    }
    return make_geometry(in[0].shape, axes, noop_, g);
  }

  bool axes_as_input_ = false;
  bool noop_ = false;
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------------------------------------
// BatchNormalization (inference): y = x * a[c] + b[c] with a = scale / sqrt(var + eps) and
// b = B - mean * a.

class BatchNormKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    training_ = opset >= 14 && node.attrs.get_int("training_mode", 0) != 0;
    per_element_ = opset < 9 && node.attrs.get_int("spatial", 1) == 0;
    return Status::ok();
  }

  // Constant parameters fold on the host in float64, exactly as the CPU kernel does.
  Status prepare(const CudaPrepareContext& ctx) override {
    const Tensor* p[4] = {ctx.constant(1), ctx.constant(2), ctx.constant(3), ctx.constant(4)};
    for (const Tensor* t : p)
      if (!t || !is_float_dtype(t->dtype()) || t->rank() != 1 || t->numel() != p[0]->numel()) return Status::ok();
    const int64_t c = p[0]->numel();
    Tensor ab(DType::kFloat32, Shape{2, c});
    float* a = ab.data<float>();
    for (int64_t i = 0; i < c; ++i) {
      const double inv = 1.0 / std::sqrt(p[3]->scalar_as_double(i) + double(epsilon_));
      const double ad = p[0]->scalar_as_double(i) * inv;
      a[i] = float(ad);
      a[c + i] = float(p[1]->scalar_as_double(i) - p[2]->scalar_as_double(i) * ad);
    }
    INGOT_ASSIGN_OR_RETURN(folded_, ctx.upload(ab));
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (training_) return "training_mode=1";
    if (per_element_) return "spatial=0";
    for (size_t i = 1; i < outputs.size(); ++i)
      if (outputs[i].set) return "training statistics outputs";
    if (inputs.size() < 5) return "needs 5 inputs";
    if (!is_float_dtype(inputs[0].dtype)) return "dtype " + dtype_name(inputs[0].dtype) + " (float types only)";
    if (inputs[0].shape.size() < 2) return "X of rank < 2";
    const int64_t c = inputs[0].shape[1];
    for (size_t i = 1; i < 5; ++i) {
      if (!inputs[i].present || shape_numel(inputs[i].shape) != c) return "parameter shapes other than [C]";
      if (!folded(c) && inputs[i].dtype != inputs[1].dtype) return "parameters of different dtypes";
      if (!is_float_dtype(inputs[i].dtype)) return "parameter dtype " + dtype_name(inputs[i].dtype);
    }
    return {};
  }

  size_t workspace_bytes(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (inputs.empty() || inputs[0].shape.size() < 2) return 0;
    const int64_t c = inputs[0].shape[1];
    return folded(c) ? 0 : size_t(2 * c) * sizeof(float);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = x.dim(0), c = x.dim(1);
    const int64_t spatial = n * c == 0 ? 0 : x.numel() / (n * c);
    const float* a = nullptr;
    if (folded(c)) {
      a = folded_.data<float>();
    } else {
      if (ctx.workspace_bytes() < size_t(2 * c) * sizeof(float)) return internal_error("BatchNormalization: workspace too small");
      float* ws = static_cast<float*>(ctx.workspace());
      INGOT_CUDA_RETURN_IF_ERROR(launch_batch_norm_fold(ctx.input(1).dtype(), ctx.input(1).raw(), ctx.input(2).raw(),
                                                        ctx.input(3).raw(), ctx.input(4).raw(), epsilon_, c, ws,
                                                        ws + c, ctx.stream()));
      a = ws;
    }
    INGOT_CUDA_RETURN_IF_ERROR(launch_channel_affine(x.dtype(), x.raw(), y.raw(), a, a + c, n, c, spatial, ctx.stream()));
    return Status::ok();
  }

 private:
  bool folded(int64_t c) const { return folded_.defined() && folded_.dim(1) == c; }

  float epsilon_ = 1e-5f;
  bool training_ = false, per_element_ = false;
  Tensor folded_;  // device [2, C] float32: a then b
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", ReduceSum, ReduceKernel<ReduceOp::kSum>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceMean, ReduceKernel<ReduceOp::kMean>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceMax, ReduceKernel<ReduceOp::kMax>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceMin, ReduceKernel<ReduceOp::kMin>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceProd, ReduceKernel<ReduceOp::kProd>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceL1, ReduceKernel<ReduceOp::kL1>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceL2, ReduceKernel<ReduceOp::kL2>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceLogSum, ReduceKernel<ReduceOp::kLogSum>);
INGOT_REGISTER_CUDA_KERNEL("", ReduceSumSquare, ReduceKernel<ReduceOp::kSumSquare>);
INGOT_REGISTER_CUDA_KERNEL("", BatchNormalization, BatchNormKernel);

}  // namespace ingot::cuda
