// Concat and Split: memcpy of contiguous runs along the axis.
#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

class ConcatKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    if (!node.attrs.has("axis") && opset >= 4) return invalid_model("attribute 'axis' is required");
    axis_ = node.attrs.get_int("axis", 1);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 1) return invalid_model("needs at least 1 input");
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (!ctx.has_input(i)) return invalid_model("input " + std::to_string(i) + " is missing");
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "inputs"));
    const Shape& s0 = ctx.input_shape(0);
    int r = int(s0.size());
    if (r == 0) return invalid_argument("cannot concatenate scalars");
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, r));
    Shape out = s0;
    out[size_t(a)] = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
      const Shape& s = ctx.input_shape(i);
      bool ok = int(s.size()) == r;
      for (int k = 0; ok && k < r; ++k) ok = k == a || s[size_t(k)] == s0[size_t(k)];
      if (!ok)
        return invalid_argument("input " + std::to_string(i) + " has shape " + shape_str(s) + ", which does not match " +
                                shape_str(s0) + " outside axis " + std::to_string(a));
      out[size_t(a)] += s[size_t(a)];
    }
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    Tensor& y = ctx.output(0);
    int r = y.rank();
    int a = int(axis_ < 0 ? axis_ + r : axis_);
    size_t es = dtype_size(y.dtype());
    int64_t outer = prod(y.shape(), 0, size_t(a));
    int64_t inner = prod(y.shape(), size_t(a) + 1, size_t(r)) * int64_t(es);
    int64_t out_row = y.dim(a) * inner;
    int n = ctx.num_inputs();
    std::vector<const uint8_t*> src(static_cast<size_t>(n));
    std::vector<int64_t> run(static_cast<size_t>(n)), off(static_cast<size_t>(n));
    int64_t acc = 0;
    for (int i = 0; i < n; ++i) {
      src[size_t(i)] = static_cast<const uint8_t*>(ctx.input(i).raw());
      run[size_t(i)] = ctx.input(i).dim(a) * inner;
      off[size_t(i)] = acc;
      acc += run[size_t(i)];
    }
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    parallel_for(outer, out_row / 4 + 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int i = 0; i < n; ++i)
          if (run[size_t(i)])
            std::memcpy(dst + o * out_row + off[size_t(i)], src[size_t(i)] + o * run[size_t(i)], size_t(run[size_t(i)]));
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = 1;
};

class SplitKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    axis_ = node.attrs.get_int("axis", 0);
    has_split_attr_ = opset < 13 && node.attrs.has("split");
    split_attr_ = node.attrs.get_ints("split");
    num_outputs_attr_ = opset >= 18 ? node.attrs.get_int("num_outputs", 0) : 0;
    if (opset >= 18 && node.attrs.has("num_outputs")) {
      if (num_outputs_attr_ <= 0)
        return invalid_model("num_outputs must be positive, got " + std::to_string(num_outputs_attr_));
      if (num_outputs_attr_ != int64_t(node.outputs.size()))
        return invalid_model("num_outputs is " + std::to_string(num_outputs_attr_) + " but the node has " +
                             std::to_string(node.outputs.size()) + " outputs");
    }
    if (node.outputs.empty()) return invalid_model("needs at least 1 output");
    return Status::ok();
  }
  // Sizes of each output along the axis. `split_in` is the split input's value (or null).
  Expected<std::vector<int64_t>> sizes(int64_t dim, int nout, const Tensor* split_in) const {
    std::vector<int64_t> sz;
    bool explicit_split = false;
    if (has_split_attr_) {
      sz = split_attr_;
      explicit_split = true;
    } else if (split_in) {
      INGOT_ASSIGN_OR_RETURN(sz, read_int_list(*split_in, 1, "split"));
      explicit_split = true;
    }
    if (explicit_split) {
      if (int(sz.size()) != nout)
        return invalid_argument("split " + ints_str(sz) + " has " + std::to_string(sz.size()) + " entries for " +
                                std::to_string(nout) + " outputs");
      int64_t sum = 0;
      for (int64_t v : sz) {
        if (v < 0) return invalid_argument("split " + ints_str(sz) + " has a negative size");
        sum += v;
      }
      if (sum != dim)
        return invalid_argument("split " + ints_str(sz) + " sums to " + std::to_string(sum) + " but the axis has size " +
                                std::to_string(dim));
      return sz;
    }
    if (num_outputs_attr_ > 0) {  // opset 18: the last chunk may be smaller
      int64_t chunk = (dim + nout - 1) / nout;
      for (int i = 0; i < nout; ++i) sz.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
      return sz;
    }
    if (dim % nout != 0)
      return invalid_argument("axis of size " + std::to_string(dim) + " cannot be split evenly into " +
                              std::to_string(nout) + " outputs");
    return std::vector<int64_t>(size_t(nout), dim / nout);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, (opset_ >= 13 || opset_ < 2) ? 2 : 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    const Shape& s = ctx.input_shape(0);
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, int(s.size())));
    if (s.empty()) return invalid_argument("cannot split a scalar");
    if (ctx.has_input(1)) {
      INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "split"));
      if (!ctx.input_value(1)) {
        for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_dynamic(i, ctx.input_dtype(0));
        return Status::ok();
      }
    }
    INGOT_ASSIGN_OR_RETURN(auto sz, sizes(s[size_t(a)], ctx.num_outputs(), ctx.input_value(1)));
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      Shape o = s;
      o[size_t(a)] = sz[size_t(i)];
      ctx.set_output(i, ctx.input_dtype(0), o);
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int r = x.rank();
    int a = int(axis_ < 0 ? axis_ + r : axis_);
    INGOT_ASSIGN_OR_RETURN(auto sz, sizes(x.dim(a), ctx.num_outputs(), ctx.has_input(1) ? &ctx.input(1) : nullptr));
    size_t es = dtype_size(x.dtype());
    int64_t outer = prod(x.shape(), 0, size_t(a));
    int64_t inner = prod(x.shape(), size_t(a) + 1, size_t(r)) * int64_t(es);
    int64_t in_row = x.dim(a) * inner;
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    int64_t off = 0;
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      Shape os = x.shape();
      os[size_t(a)] = sz[size_t(i)];
      int64_t run = sz[size_t(i)] * inner;
      if (!ctx.has_output(i)) {
        off += run;
        continue;
      }
      Tensor& y = ctx.allocate_output(i, x.dtype(), os);
      uint8_t* dst = static_cast<uint8_t*>(y.raw());
      if (run)
        parallel_for(outer, run / 4 + 1, [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) std::memcpy(dst + o * run, src + o * in_row + off, size_t(run));
        });
      off += run;
    }
    return Status::ok();
  }

 private:
  int opset_ = 0;
  int64_t axis_ = 0;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_attr_ = 0;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Concat, tensor_ops::ConcatKernel);
INGOT_REGISTER_KERNEL(cpu, "", Split, tensor_ops::SplitKernel);

}  // namespace ingot
