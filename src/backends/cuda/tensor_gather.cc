// Index-driven ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements (and the
// deprecated Scatter), OneHot. Indices known on the host at plan time are checked here with
// the CPU kernel's errors; indices computed on the device cannot be checked without a host
// read, and out-of-range ones read zeros (gathers) or are skipped (scatters).
#include "backends/cuda/tensor_host.h"

namespace ingot::cuda {
namespace {

using namespace tensor_host;

bool is_int64(const Tensor& t) { return t.dtype() == DType::kInt64; }

// ---------------------------------------------------------------- Gather
class GatherKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int a = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    if (const Tensor* hv = ctx.host_value(1))
      INGOT_RETURN_IF_ERROR(tensor_ops::read_indices(*hv, x.dim(a), 1, "indices", a).status());
    return launch_result(launch_gather(x.raw(), ind.raw(), is_int64(ind), ctx.output(0).raw(), dtype_size(x.dtype()),
                                       prod(x.shape(), 0, size_t(a)), x.dim(a), ind.numel(),
                                       prod(x.shape(), size_t(a) + 1, size_t(x.rank())), ctx.stream()),
                         "Gather");
  }

 private:
  int64_t axis_ = 0;
};

// ---------------------------------------------------------------- GatherElements / ScatterElements
ElementsDesc elements_desc(const Shape& data, const Shape& index_shape, int axis) {
  ElementsDesc d;
  std::vector<int64_t> st = strides_of(data);
  d.rank = int(data.size());
  d.axis = axis;
  d.axis_dim = data[size_t(axis)];
  for (int k = 0; k < d.rank; ++k) {
    d.dims[k] = index_shape[size_t(k)];
    d.strides[k] = st[size_t(k)];
  }
  return d;
}

class GatherElementsKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    return rank_reason(inputs[0].shape.size(), kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const int a = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    if (const Tensor* hv = ctx.host_value(1))
      INGOT_RETURN_IF_ERROR(tensor_ops::read_indices(*hv, x.dim(a), 1, "indices", a).status());
    return launch_result(
        launch_gather_elements(x.raw(), ind.raw(), is_int64(ind), ctx.output(0).raw(), dtype_size(x.dtype()),
                               elements_desc(x.shape(), ind.shape(), a), ctx.stream()),
        "GatherElements");
  }

 private:
  int64_t axis_ = 0;
};

// Reductions other than none would need atomics per dtype; those nodes run on the CPU.
std::string reduction_reason(const Node& node) {
  std::string r = node.attrs.get_string("reduction", "none");
  return r == "none" ? std::string() : "reduction '" + r + "'";
}

// Scatters write into a copy of data; duplicate indices (undefined in ONNX) keep one of the
// updates, not necessarily the last one as the CPU kernel does.
class ScatterElementsKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    axis_ = node.attrs.get_int("axis", 0);
    reduction_reason_ = node.op_type == "Scatter" ? std::string() : reduction_reason(node);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (!reduction_reason_.empty()) return reduction_reason_;
    return rank_reason(inputs[0].shape.size(), kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    Tensor& y = ctx.output(0);
    const int a = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    if (const Tensor* hv = ctx.host_value(1))
      INGOT_RETURN_IF_ERROR(tensor_ops::read_indices(*hv, x.dim(a), 1, "indices", a).status());
    if (x.nbytes())
      INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return launch_result(launch_scatter_elements(y.raw(), ind.raw(), is_int64(ind), upd.raw(), dtype_size(x.dtype()),
                                                 elements_desc(x.shape(), upd.shape(), a), ctx.stream()),
                         "ScatterElements");
  }

 private:
  int64_t axis_ = 0;
  std::string reduction_reason_;
};

// ---------------------------------------------------------------- GatherND / ScatterND
// Checks host-known index tuples as the CPU kernels do (same messages).
Status check_nd_indices(const Tensor& ind, const Shape& d, int64_t b) {
  const int64_t m = ind.shape().back();
  std::vector<int64_t> idx = ind.to_int_vector();
  for (size_t t = 0; t < idx.size(); ++t) {
    int axis = int(b + int64_t(t) % m);
    int64_t v = idx[t];
    INGOT_RETURN_IF_ERROR(tensor_ops::fix_index(v, d[size_t(axis)], 1, "indices", axis));
  }
  return Status::ok();
}

NdDesc nd_desc(const Shape& d, const Shape& is, int64_t b) {
  NdDesc n;
  const size_t bs = size_t(b);
  n.m = int(is.back());
  std::vector<int64_t> st = strides_of(d);
  n.batches = prod(d, 0, bs);
  n.batch_stride = prod(d, bs, d.size());
  n.tuples = prod(is, bs, is.size() - 1);
  n.slice = prod(d, bs + size_t(n.m), d.size());
  for (int k = 0; k < n.m; ++k) {
    n.dims[k] = d[bs + size_t(k)];
    n.strides[k] = st[bs + size_t(k)];
  }
  return n;
}

class GatherNDKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    b_ = opset >= 12 ? node.attrs.get_int("batch_dims", 0) : 0;
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    const Shape& is = inputs[1].shape;
    return rank_reason(size_t(is.empty() ? 0 : is.back()), kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    if (const Tensor* hv = ctx.host_value(1)) INGOT_RETURN_IF_ERROR(check_nd_indices(*hv, x.shape(), b_));
    return launch_result(launch_gather_nd(x.raw(), ind.raw(), is_int64(ind), ctx.output(0).raw(), dtype_size(x.dtype()),
                                          nd_desc(x.shape(), ind.shape(), b_), ctx.stream()),
                         "GatherND");
  }

 private:
  int64_t b_ = 0;
};

class ScatterNDKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    reduction_reason_ = reduction_reason(node);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    if (!reduction_reason_.empty()) return reduction_reason_;
    const Shape& is = inputs[1].shape;
    return rank_reason(size_t(is.empty() ? 0 : is.back()), kMaxKernelDims);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    Tensor& y = ctx.output(0);
    if (const Tensor* hv = ctx.host_value(1)) INGOT_RETURN_IF_ERROR(check_nd_indices(*hv, x.shape(), 0));
    if (x.nbytes())
      INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    return launch_result(launch_scatter_nd(y.raw(), ind.raw(), is_int64(ind), ctx.input(2).raw(), dtype_size(x.dtype()),
                                           nd_desc(x.shape(), ind.shape(), 0), ctx.stream()),
                         "ScatterND");
  }

 private:
  std::string reduction_reason_;
};

// ---------------------------------------------------------------- OneHot
class OneHotKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    axis_ = node.attrs.get_int("axis", -1);
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    DType t = inputs[0].dtype;
    if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kFloat32)
      return "indices dtype " + dtype_name(t) + " (the CUDA kernel reads int32, int64 or float32)";
    return dynamic_outputs_reason(outputs);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& ind = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int r = ind.rank();
    const size_t a = size_t(axis_ < 0 ? axis_ + r + 1 : axis_);
    return launch_result(
        launch_one_hot(ind.raw(), ind.dtype(), ctx.input(2).raw(), y.raw(), dtype_size(y.dtype()),
                       prod(ind.shape(), 0, a), y.dim(int(a)), prod(ind.shape(), a, size_t(r)), ctx.stream()),
        "OneHot");
  }

 private:
  int64_t axis_ = -1;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", Gather, GatherKernel);
INGOT_REGISTER_CUDA_KERNEL("", GatherElements, GatherElementsKernel);
INGOT_REGISTER_CUDA_KERNEL("", GatherND, GatherNDKernel);
INGOT_REGISTER_CUDA_KERNEL("", ScatterND, ScatterNDKernel);
INGOT_REGISTER_CUDA_KERNEL("", ScatterElements, ScatterElementsKernel);
INGOT_REGISTER_CUDA_KERNEL("", Scatter, ScatterElementsKernel);
INGOT_REGISTER_CUDA_KERNEL("", OneHot, OneHotKernel);

}  // namespace ingot::cuda
