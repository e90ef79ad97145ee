// Ops that read a strided or repeated view of their input: Slice (any steps, negative ones
// included), Expand and Tile (broadcast copies) and Pad. Slice and Pad need their starts/pads
// on the host at plan time; without them the node runs on the CPU.
#include "backends/cuda/tensor_host.h"

namespace ingot::cuda {
namespace {

using namespace tensor_host;

// ---------------------------------------------------------------- Slice
class SliceKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override { return params_.init(node, opset); }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    const Tensor* v[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    if (!params_.from_attributes()) {
      const char* names[5] = {"data", "starts", "ends", "axes", "steps"};
      for (int i = 1; i < 5 && size_t(i) < inputs.size(); ++i) {
        if (std::string r = host_value_reason(inputs, i, names[i]); !r.empty()) return r;
        v[i] = inputs[size_t(i)].present ? inputs[size_t(i)].value : nullptr;
      }
    }
    if (std::string r = dynamic_outputs_reason(outputs); !r.empty()) return r;
    if (std::string r = rank_reason(inputs[0].shape.size(), kMaxCopyDims); !r.empty()) return r;
    auto d = desc(inputs[0].shape, v);
    if (!d) return d.status().message();
    return copy_reason(d->first);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor* v[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    for (int i = 1; i < 5; ++i)
      if (!params_.from_attributes() && ctx.has_input(i)) v[i] = ctx.host_value(i);
    INGOT_ASSIGN_OR_RETURN(auto d, desc(x.shape(), v));
    const size_t es = dtype_size(x.dtype());
    const void* first = static_cast<const uint8_t*>(x.raw()) + d.second * int64_t(es);
    return launch_result(launch_strided_copy(first, ctx.output(0).raw(), es, d.first, ctx.stream()), "Slice");
  }

 private:
  // The copy (dims and strides per input axis) of the CPU kernel's view, and the offset of its
  // first element.
  Expected<std::pair<CopyDesc, int64_t>> desc(const Shape& in, const Tensor* const* v) const {
    INGOT_ASSIGN_OR_RETURN(tensor_ops::SliceView view, params_.view(in, v));
    std::vector<int64_t> st = strides_of(in);
    CopyDesc c;
    int64_t base = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      base += view.start[k] * st[k];
      c.push(view.out[k], view.step[k] * st[k]);
    }
    return std::make_pair(c, base);
  }

  tensor_ops::SliceParams params_;
};

// ---------------------------------------------------------------- Expand / Tile
// The output shape comes from infer(); the copy reads the input through broadcast strides.
CopyDesc expand_desc(const Shape& in, const Shape& out) {
  std::vector<int64_t> st = broadcast_strides(in, out);
  CopyDesc d;
  for (size_t k = 0; k < out.size(); ++k) d.push(out[k], st[k]);
  return d;
}

class ExpandKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (std::string r = dynamic_outputs_reason(outputs); !r.empty()) return r;
    if (std::string r = rank_reason(outputs[0].shape.size(), kMaxCopyDims); !r.empty()) return r;
    return copy_reason(expand_desc(inputs[0].shape, outputs[0].shape));
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    return launch_result(
        launch_strided_copy(x.raw(), y.raw(), dtype_size(x.dtype()), expand_desc(x.shape(), y.shape()), ctx.stream()),
        "Expand");
  }
};

// Tile as a broadcast: input [d0, d1, ...] seen as [1, d0, 1, d1, ...] and expanded to
// [r0, d0, r1, d1, ...], which is the output's row-major layout.
CopyDesc tile_desc(const Shape& in, const Shape& out) {
  std::vector<int64_t> st = strides_of(in);
  CopyDesc d;
  for (size_t k = 0; k < in.size(); ++k) {
    d.push(in[k] == 0 ? 0 : out[k] / in[k], 0);
    d.push(in[k], st[k]);
  }
  return d;
}

class TileKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (std::string r = dynamic_outputs_reason(outputs); !r.empty()) return r;
    if (std::string r = rank_reason(inputs[0].shape.size(), kMaxCopyDims / 2); !r.empty()) return r;
    return copy_reason(tile_desc(inputs[0].shape, outputs[0].shape));
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (x.rank() == 0)
      return launch_result(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()),
                           "Tile");
    return launch_result(
        launch_strided_copy(x.raw(), y.raw(), dtype_size(x.dtype()), tile_desc(x.shape(), y.shape()), ctx.stream()),
        "Tile");
  }
};

// ---------------------------------------------------------------- Pad
class PadKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    std::string mode = node.attrs.get_string("mode", "constant");
    if (mode == "reflect")
      kind_ = PadKind::kReflect;
    else if (mode == "edge")
      kind_ = PadKind::kEdge;
    else if (mode == "wrap")
      kind_ = PadKind::kWrap;
    else
      kind_ = PadKind::kConstant;
    if (opset < 11) {
      pads_attr_ = node.attrs.get_ints(opset < 2 ? "paddings" : "pads");
      value_attr_ = node.attrs.get_float("value", 0.f);
    }
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (opset_ >= 11) {
      if (std::string r = host_value_reason(inputs, 1, "pads"); !r.empty()) return r;
      if (std::string r = host_value_reason(inputs, 3, "axes"); !r.empty()) return r;
    }
    if (std::string r = dynamic_outputs_reason(outputs); !r.empty()) return r;
    return rank_reason(inputs[0].shape.size(), kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = dtype_size(x.dtype());
    if (x.rank() == 0)
      return launch_result(cudaMemcpyAsync(y.raw(), x.raw(), es, cudaMemcpyDeviceToDevice, ctx.stream()), "Pad");
    INGOT_ASSIGN_OR_RETURN(auto begin, begin_pads(x.rank(), ctx));
    PadDesc d;
    d.rank = x.rank();
    d.kind = kind_;
    for (int k = 0; k < d.rank; ++k) {
      d.out_dims[k] = y.dim(k);
      d.in_dims[k] = x.dim(k);
      d.begin[k] = begin[size_t(k)];
    }
    // The fill: the constant_value input (its host value, or read on the device), or the
    // opset < 11 attribute, or zero.
    const void* fill_device = nullptr;
    uint64_t fill_bits = 0;
    if (opset_ < 11) {
      fill_bits = element_bits(x.dtype(), double(value_attr_));
    } else if (ctx.has_input(2) && ctx.input(2).numel() == 1) {
      if (const Tensor* hv = ctx.host_value(2))
        fill_bits = first_element_bits(*hv);
      else
        fill_device = ctx.input(2).raw();
    }
    return launch_result(launch_pad(x.raw(), y.raw(), es, d, fill_device, fill_bits, ctx.stream()), "Pad");
  }

 private:
  // Pads before each axis (ONNX layout [begins..., ends...] over `axes` or all axes).
  Expected<std::vector<int64_t>> begin_pads(int r, const CudaComputeContext& ctx) const {
    std::vector<int64_t> pads = pads_attr_, axes;
    if (opset_ >= 11) {
      INGOT_ASSIGN_OR_RETURN(pads, tensor_ops::read_int_list(*ctx.host_value(1), 1, "pads"));
    }
    if (opset_ >= 11 && ctx.has_input(3)) {
      INGOT_ASSIGN_OR_RETURN(axes, tensor_ops::read_int_list(*ctx.host_value(3), 3, "axes"));
    } else {
      for (int i = 0; i < r; ++i) axes.push_back(i);
    }
    if (pads.size() != 2 * axes.size())
      return invalid_argument("pads " + ints_str(pads) + " must have " + std::to_string(2 * axes.size()) + " entries");
    std::vector<int64_t> begin(size_t(r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axes[i], r, "axes entry"));
      begin[size_t(a)] = pads[i];
    }
    return begin;
  }

  int opset_ = 0;
  PadKind kind_ = PadKind::kConstant;
  std::vector<int64_t> pads_attr_;
  float value_attr_ = 0;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", Slice, SliceKernel);
INGOT_REGISTER_CUDA_KERNEL("", Expand, ExpandKernel);
INGOT_REGISTER_CUDA_KERNEL("", Tile, TileKernel);
INGOT_REGISTER_CUDA_KERNEL("", Pad, PadKernel);

}  // namespace ingot::cuda
