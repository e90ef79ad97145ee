// Ops that rearrange whole tensors: Transpose, DepthToSpace, SpaceToDepth (a transpose of a
// 6-D view), Concat and Split (one launch for all inputs or outputs).
#include "backends/cuda/tensor_host.h"

namespace ingot::cuda {
namespace {

using namespace tensor_host;

// ---------------------------------------------------------------- Transpose
class TransposeKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    has_perm_ = node.attrs.has("perm");
    perm_ = node.attrs.get_ints("perm");
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    (void)outputs;
    const Shape& s = inputs[0].shape;
    if (std::string r = rank_reason(s.size(), kMaxCopyDims); !r.empty()) return r;
    return copy_reason(permute_desc(s, perm_for(int(s.size()))));
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    CopyDesc d = permute_desc(x.shape(), perm_for(x.rank()));
    return launch_result(launch_strided_copy(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), d, ctx.stream()),
                         "Transpose");
  }

 private:
  // infer() on the CPU kernel has validated the permutation for this rank.
  std::vector<int> perm_for(int rank) const {
    std::vector<int> p;
    if (!has_perm_) {
      for (int i = rank - 1; i >= 0; --i) p.push_back(i);
    } else {
      for (int64_t v : perm_) p.push_back(int(v));
    }
    return p;
  }

  bool has_perm_ = false;
  std::vector<int64_t> perm_;
};

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth
class SpaceDepthKernel : public CudaKernel {
 public:
  explicit SpaceDepthKernel(bool to_space) : to_space_(to_space) {}
  Status init(const Node& node, int opset) override {
    (void)opset;
    b_ = node.attrs.get_int("blocksize", 0);
    if (b_ <= 0) return invalid_model("blocksize must be positive, got " + std::to_string(b_));
    crd_ = to_space_ && node.attrs.get_string("mode", "DCR") == "CRD";
    return Status::ok();
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    const Tensor& x = ctx.input(0);
    const tensor_ops::SpaceDepthView v = tensor_ops::space_depth_view(x.shape(), b_, to_space_, crd_);
    return launch_result(launch_strided_copy(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()),
                                             permute_desc(v.shape6, v.perm), ctx.stream()),
                         to_space_ ? "DepthToSpace" : "SpaceToDepth");
  }

 private:
  bool to_space_;
  bool crd_ = false;
  int64_t b_ = 0;
};

class DepthToSpaceKernel : public SpaceDepthKernel {
 public:
  DepthToSpaceKernel() : SpaceDepthKernel(true) {}
};
class SpaceToDepthKernel : public SpaceDepthKernel {
 public:
  SpaceToDepthKernel() : SpaceDepthKernel(false) {}
};

// ---------------------------------------------------------------- Concat
class ConcatKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    axis_ = node.attrs.get_int("axis", 1);
    return Status::ok();
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (empty_output(ctx)) return Status::ok();
    Tensor& y = ctx.output(0);
    const int r = y.rank();
    const size_t a = size_t(axis_ < 0 ? axis_ + r : axis_);
    const int64_t es = int64_t(dtype_size(y.dtype()));
    const int64_t outer = prod(y.shape(), 0, a);
    const int64_t inner = prod(y.shape(), a + 1, size_t(r)) * es;
    const int n = ctx.num_inputs();
    std::vector<const void*> src(static_cast<size_t>(n));
    std::vector<int64_t> run(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {  // an input without elements may have no buffer
      src[size_t(i)] = ctx.has_input(i) ? ctx.input(i).raw() : nullptr;
      run[size_t(i)] = ctx.has_input(i) ? ctx.input(i).dim(int(a)) * inner : 0;
    }
    return launch_result(launch_concat(src.data(), run.data(), n, outer, y.dim(int(a)) * inner, y.raw(), ctx.stream()),
                         "Concat");
  }

 private:
  int64_t axis_ = 1;
};

// ---------------------------------------------------------------- Split
class SplitKernel : public CudaKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 0);
    has_split_attr_ = opset < 13 && node.attrs.has("split");
    split_attr_ = node.attrs.get_ints("split");
    num_outputs_attr_ = opset >= 18 ? node.attrs.get_int("num_outputs", 0) : 0;
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (std::string r = host_value_reason(inputs, 1, "split"); !r.empty()) return r;
    return dynamic_outputs_reason(outputs);
  }
  Status compute(CudaComputeContext& ctx) const override {
    if (ctx.input(0).numel() == 0) return Status::ok();
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    const int a = int(axis_ < 0 ? axis_ + r : axis_);
    const int n = ctx.num_outputs();
    INGOT_ASSIGN_OR_RETURN(auto sz, sizes(x.dim(a), n, ctx.has_input(1) ? ctx.host_value(1) : nullptr));
    const int64_t es = int64_t(dtype_size(x.dtype()));
    const int64_t inner = prod(x.shape(), size_t(a) + 1, size_t(r)) * es;
    std::vector<void*> dst(static_cast<size_t>(n));
    std::vector<int64_t> run(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      dst[size_t(i)] = ctx.has_output(i) ? ctx.output(i).raw() : nullptr;
      run[size_t(i)] = sz[size_t(i)] * inner;
    }
    return launch_result(
        launch_split(x.raw(), prod(x.shape(), 0, size_t(a)), x.dim(a) * inner, dst.data(), run.data(), n, ctx.stream()),
        "Split");
  }

 private:
  // The CPU kernel's sizes along the axis (its infer() validated them for these shapes).
  Expected<std::vector<int64_t>> sizes(int64_t dim, int nout, const Tensor* split_in) const {
    if (has_split_attr_) return split_attr_;
    if (split_in) return tensor_ops::read_int_list(*split_in, 1, "split");
    std::vector<int64_t> sz;
    if (num_outputs_attr_ > 0) {  // opset 18: the last chunk may be smaller
      int64_t chunk = (dim + nout - 1) / nout;
      for (int i = 0; i < nout; ++i) sz.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
      return sz;
    }
    return std::vector<int64_t>(size_t(nout), dim / nout);
  }

  int64_t axis_ = 0;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_attr_ = 0;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", Transpose, TransposeKernel);
INGOT_REGISTER_CUDA_KERNEL("", DepthToSpace, DepthToSpaceKernel);
INGOT_REGISTER_CUDA_KERNEL("", SpaceToDepth, SpaceToDepthKernel);
INGOT_REGISTER_CUDA_KERNEL("", Concat, ConcatKernel);
INGOT_REGISTER_CUDA_KERNEL("", Split, SplitKernel);

}  // namespace ingot::cuda
