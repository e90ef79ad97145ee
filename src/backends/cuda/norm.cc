// CUDA kernels of the normalisation family: LayerNormalization, ingot.SkipLayerNorm, Softmax,
// LogSoftmax and ingot.Gelu. Same functions as the CPU kernels (src/backends/cpu/norm_layer.cc,
// fused_norm.cc, softmax.cc); statistics and arithmetic in float32 for every storage type.
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/norm_impl.h"
#include "ir/shape_util.h"
#include "ir/softmax_axis.h"

namespace ingot::cuda {
namespace {

bool device_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

std::string dtype_reason(const char* what, DType t) { return std::string(what) + " dtype " + dtype_name(t); }

bool has(const std::vector<InputMeta>& in, int i) { return size_t(i) < in.size() && in[size_t(i)].present; }
bool has(const std::vector<OutputMeta>& out, int i) { return size_t(i) < out.size() && out[size_t(i)].set; }

size_t round_up_256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Gamma/beta/bias are used in place when they cover the normalised block densely in the
// input's dtype; otherwise each is expanded to float32 in the workspace first.
bool param_dense(const Shape& shape, DType dtype, DType x_dtype, int64_t d) {
  return shape_numel(shape) == d && dtype == x_dtype;
}

// How `param` (shape broadcastable to the normalised block `norm`) reads element k of it.
ParamBroadcast broadcast_of(const Shape& param, const Shape& norm) {
  ParamBroadcast b;
  std::vector<int64_t> st = broadcast_strides(param, norm);
  b.rank = int(norm.size());
  for (size_t i = 0; i < norm.size(); ++i) {
    b.dims[i] = norm[i];
    b.strides[i] = st[i];
  }
  return b;
}

// The rows (of the output's last dim) `in` repeats with when broadcast to `out`: `in` must be
// leading ones followed by out's trailing dims, so row r of the output reads row r % period.
// -1 when `in` broadcasts in some other way.
int64_t row_period(const Shape& in, const Shape& out) {
  if (in.empty() || in.size() > out.size() || in.back() != out.back()) return -1;
  const size_t off = out.size() - in.size();
  size_t i = 0;
  while (i < in.size() && in[i] == 1) ++i;
  for (size_t j = i; j < in.size(); ++j)
    if (in[j] != out[off + j]) return -1;
  const int64_t h = out.back();
  return h ? shape_numel(in) / h : 0;
}

// ---------------------------------------------------------------------------------------------

class LayerNormKernel : public CudaKernel {
 public:
  bool prefetches_l2() const override { return true; }
  Status init(const Node& node, int) override {
    axis_ = node.attrs.get_int("axis", -1);
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    const int64_t stash = node.attrs.get_int("stash_type", 1);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    if (!dtype_is_float(DType(stash))) {
      return invalid_model("attribute stash_type is " + std::to_string(stash) + "; expected a float type (1 = float32)");
    }
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (!has(in, 0) || !has(in, 1)) return "needs inputs X and Scale";
    if (!device_float(in[0].dtype)) return dtype_reason("X", in[0].dtype);
    if (!device_float(in[1].dtype)) return dtype_reason("Scale", in[1].dtype);
    if (has(in, 2) && !device_float(in[2].dtype)) return dtype_reason("B", in[2].dtype);
    for (int i = 1; i < 3; ++i)
      if (has(out, i) && !device_float(out[size_t(i)].dtype)) return dtype_reason("statistics output", out[size_t(i)].dtype);
    auto axis = normalize_axis(axis_, int(in[0].shape.size()), "axis");
    if (!axis) return "axis " + std::to_string(axis_) + " out of range";
    if (expands(in) && int(in[0].shape.size()) - *axis > kMaxParamRank) {
      return "Scale/B broadcast over more than " + std::to_string(kMaxParamRank) + " normalised dims";
    }
    return {};
  }

  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (!expands(in)) return 0;
    auto axis = normalize_axis(axis_, int(in[0].shape.size()), "axis");
    if (!axis) return 0;
    const Shape norm(in[0].shape.begin() + *axis, in[0].shape.end());
    return 2 * round_up_256(size_t(shape_numel(norm)) * sizeof(float));
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, x.rank(), "axis"));
    const Shape norm(x.shape().begin() + axis, x.shape().end());
    const int64_t d = shape_numel(norm);
    if (d == 0 || x.numel() == 0) return Status::ok();
    Tensor& y = ctx.output(0);
    RowNormLaunch a;
    a.dtype = x.dtype();
    a.param_dtype = x.dtype();
    a.x = x.raw();
    a.gamma = ctx.input(1).raw();
    a.beta = ctx.has_input(2) ? ctx.input(2).raw() : nullptr;
    a.y = y.raw();
    a.rows = x.numel() / d;
    a.d = d;
    a.x_period = a.rows;
    a.epsilon = epsilon_;
    a.sm_count = ctx.handles().sm_count;
    if (ctx.has_output(1)) {
      a.mean = ctx.output(1).raw();
      a.stat_dtype = ctx.output(1).dtype();
    }
    if (ctx.has_output(2)) {
      a.inv_std = ctx.output(2).raw();
      a.stat_dtype = ctx.output(2).dtype();
    }
    if (a.mean && a.inv_std && ctx.output(1).dtype() != ctx.output(2).dtype()) {
      return internal_error("LayerNormalization outputs Mean and InvStdDev have different dtypes");
    }
    const bool expand = !param_dense(ctx.input(1).shape(), ctx.input(1).dtype(), x.dtype(), d) ||
                        (ctx.has_input(2) && !param_dense(ctx.input(2).shape(), ctx.input(2).dtype(), x.dtype(), d));
    if (expand) {
      const size_t slot = round_up_256(size_t(d) * sizeof(float));
      if (ctx.workspace_bytes() < 2 * slot) return internal_error("LayerNormalization: workspace too small");
      float* g = static_cast<float*>(ctx.workspace());
      float* b = reinterpret_cast<float*>(static_cast<char*>(ctx.workspace()) + slot);
      const Tensor& scale = ctx.input(1);
      INGOT_CUDA_RETURN_IF_ERROR(
          launch_expand_param(scale.raw(), scale.dtype(), broadcast_of(scale.shape(), norm), d, g, ctx.stream()));
      a.gamma = g;
      if (ctx.has_input(2)) {
        const Tensor& bias = ctx.input(2);
        INGOT_CUDA_RETURN_IF_ERROR(
            launch_expand_param(bias.raw(), bias.dtype(), broadcast_of(bias.shape(), norm), d, b, ctx.stream()));
        a.beta = b;
      }
      a.param_dtype = DType::kFloat32;
    }
    a.params_constant = !expand && ctx.host_value(1) && (!ctx.has_input(2) || ctx.host_value(2));
    a.prefetch = ctx.l2_prefetch();
    INGOT_CUDA_RETURN_IF_ERROR(launch_row_norm(a, ctx.stream()));
    return Status::ok();
  }

 private:
  bool expands(const std::vector<InputMeta>& in) const {
    auto axis = normalize_axis(axis_, int(in[0].shape.size()), "axis");
    if (!axis) return false;
    const Shape norm(in[0].shape.begin() + *axis, in[0].shape.end());
    const int64_t d = shape_numel(norm);
    return !param_dense(in[1].shape, in[1].dtype, in[0].dtype, d) ||
           (has(in, 2) && !param_dense(in[2].shape, in[2].dtype, in[0].dtype, d));
  }

  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
};

// ---------------------------------------------------------------------------------------------

class SkipLayerNormKernel : public CudaKernel {
 public:
  bool prefetches_l2() const override { return true; }
  Status init(const Node& node, int) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    const int64_t axis = node.attrs.get_int("axis", -1);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    if (axis != -1) return invalid_model("attribute axis is " + std::to_string(axis) + "; only -1 (the last axis) is supported");
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    static const char* names[] = {"X", "skip", "gamma", "beta", "bias"};
    if (!has(in, 0) || !has(in, 1) || !has(in, 2)) return "needs inputs X, skip and gamma";
    for (int i = 0; i < 5; ++i)
      if (has(in, i) && !device_float(in[size_t(i)].dtype)) return dtype_reason(names[i], in[size_t(i)].dtype);
    if (in[0].dtype != in[1].dtype) return "X and skip have different dtypes";
    if (!has(out, 0) || out[0].shape.empty()) return "output shape unknown";
    const Shape& os = out[0].shape;
    if (row_period(in[0].shape, os) < 0) return "X broadcast other than along leading dims";
    if (row_period(in[1].shape, os) < 0) return "skip broadcast other than along leading dims";
    return {};
  }

  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (!has(out, 0) || out[0].shape.empty()) return 0;
    const int64_t h = out[0].shape.back();
    bool expand = false;
    for (int i = 2; i < 5; ++i)
      if (has(in, i)) expand |= !param_dense(in[size_t(i)].shape, in[size_t(i)].dtype, in[0].dtype, h);
    return expand ? 3 * round_up_256(size_t(h) * sizeof(float)) : 0;
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    Tensor& y = ctx.output(0);
    const Shape& os = y.shape();
    const int64_t h = os.back();
    if (h == 0 || y.numel() == 0) return Status::ok();
    RowNormLaunch a;
    a.dtype = x.dtype();
    a.param_dtype = x.dtype();
    a.x = x.raw();
    a.skip = skip.raw();
    a.gamma = ctx.input(2).raw();
    a.beta = ctx.has_input(3) ? ctx.input(3).raw() : nullptr;
    a.bias = ctx.has_input(4) ? ctx.input(4).raw() : nullptr;
    a.y = y.raw();
    a.sum = ctx.has_output(1) ? ctx.output(1).raw() : nullptr;
    a.rows = y.numel() / h;
    a.d = h;
    a.x_period = row_period(x.shape(), os);
    a.skip_period = row_period(skip.shape(), os);
    if (a.x_period <= 0 || a.skip_period <= 0) return internal_error("SkipLayerNorm: unsupported broadcast of X or skip");
    a.epsilon = epsilon_;
    a.sm_count = ctx.handles().sm_count;
    bool expand = false;
    for (int i = 2; i < 5; ++i)
      if (ctx.has_input(i)) expand |= !param_dense(ctx.input(i).shape(), ctx.input(i).dtype(), x.dtype(), h);
    if (expand) {
      const size_t slot = round_up_256(size_t(h) * sizeof(float));
      if (ctx.workspace_bytes() < 3 * slot) return internal_error("SkipLayerNorm: workspace too small");
      const void** targets[] = {&a.gamma, &a.beta, &a.bias};
      for (int i = 2; i < 5; ++i) {
        if (!ctx.has_input(i)) continue;
        const Tensor& p = ctx.input(i);
        float* dst = reinterpret_cast<float*>(static_cast<char*>(ctx.workspace()) + size_t(i - 2) * slot);
        // [h] or a single value ([1] or a scalar) repeated over the row.
        ParamBroadcast b;
        b.rank = 1;
        b.dims[0] = h;
        b.strides[0] = p.numel() == 1 ? 0 : 1;
        INGOT_CUDA_RETURN_IF_ERROR(launch_expand_param(p.raw(), p.dtype(), b, h, dst, ctx.stream()));
        *targets[i - 2] = dst;
      }
      a.param_dtype = DType::kFloat32;
    }
    a.params_constant = !expand && ctx.host_value(2) && (!ctx.has_input(3) || ctx.host_value(3));
    a.prefetch = ctx.l2_prefetch();
    INGOT_CUDA_RETURN_IF_ERROR(launch_row_norm(a, ctx.stream()));
    return Status::ok();
  }

 private:
  float epsilon_ = 1e-5f;
};

// ---------------------------------------------------------------------------------------------

// Softmax / LogSoftmax as an [outer, n, inner] problem (ir/softmax_axis.h).
template <bool kLog>
class SoftmaxKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_.init(node, opset);
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (!has(in, 0)) return "needs input 0";
    if (!device_float(in[0].dtype)) return dtype_reason("input", in[0].dtype);
    if (auto sp = axis_.split(in[0].shape); !sp) return sp.status().message();
    return {};
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(SoftmaxSplit sp, axis_.split(x.shape()));
    INGOT_CUDA_RETURN_IF_ERROR(launch_softmax(x.raw(), ctx.output(0).raw(), x.dtype(), sp.outer, sp.n, sp.inner, kLog,
                                              ctx.handles().sm_count, ctx.stream()));
    return Status::ok();
  }

 private:
  SoftmaxAxis axis_;
};

// ---------------------------------------------------------------------------------------------

class GeluKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    const std::string a = node.attrs.get_string("approximate", "none");
    if (a != "none" && a != "tanh") return invalid_model("attribute approximate is '" + a + "'; expected \"none\" or \"tanh\"");
    tanh_ = a == "tanh";
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (!has(in, 0)) return "needs input 0";
    if (!device_float(in[0].dtype)) return dtype_reason("X", in[0].dtype);
    return {};
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_CUDA_RETURN_IF_ERROR(
        launch_gelu(x.raw(), ctx.output(0).raw(), x.dtype(), x.numel(), tanh_, ctx.handles().sm_count, ctx.stream()));
    return Status::ok();
  }

 private:
  bool tanh_ = false;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", LayerNormalization, LayerNormKernel);
INGOT_REGISTER_CUDA_KERNEL("ingot", SkipLayerNorm, SkipLayerNormKernel);
INGOT_REGISTER_CUDA_KERNEL("", Softmax, SoftmaxKernel<false>);
INGOT_REGISTER_CUDA_KERNEL("", LogSoftmax, SoftmaxKernel<true>);
INGOT_REGISTER_CUDA_KERNEL("ingot", Gelu, GeluKernel);

}  // namespace ingot::cuda
