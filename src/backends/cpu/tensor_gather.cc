// Gather, GatherElements, GatherND and Compress. Every index is range-checked first; rows of
// contiguous elements are moved with memcpy.
#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

// ---------------------------------------------------------------- Gather
class GatherKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "indices"));
    const Shape& d = ctx.input_shape(0);
    if (d.empty()) return invalid_argument("input 0 (data) must have rank >= 1, got a scalar");
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, int(d.size())));
    Shape out(d.begin(), d.begin() + a);
    for (int64_t v : ctx.input_shape(1)) out.push_back(v);
    out.insert(out.end(), d.begin() + a + 1, d.end());
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int a = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    INGOT_ASSIGN_OR_RETURN(auto idx, read_indices(ctx.input(1), x.dim(a), 1, "indices", a));
    Tensor& y = ctx.output(0);
    size_t es = dtype_size(x.dtype());
    int64_t outer = prod(x.shape(), 0, size_t(a));
    int64_t inner = prod(x.shape(), size_t(a) + 1, size_t(x.rank())) * int64_t(es);
    int64_t n = int64_t(idx.size()), in_row = x.dim(a) * inner;
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    if (inner == 0) return Status::ok();
    auto copy = [&](auto tag) {
      using T = typename decltype(tag)::type;
      parallel_for(outer * n, inner / 4 + 1, [&](int64_t b, int64_t e) {
        for (int64_t w = b; w < e; ++w) {
          int64_t o = w / n, j = w % n;
          const uint8_t* s = src + o * in_row + idx[size_t(j)] * inner;
          if (inner == int64_t(sizeof(T))) std::memcpy(dst + w * inner, s, sizeof(T));  // single element
          else std::memcpy(dst + w * inner, s, size_t(inner));
        }
      });
    };
    dispatch_by_size(x.dtype(), copy);
    return Status::ok();
  }

 private:
  int64_t axis_ = 0;
};

// ---------------------------------------------------------------- GatherElements
class GatherElementsKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "indices"));
    const Shape& d = ctx.input_shape(0);
    const Shape& is = ctx.input_shape(1);
    if (d.empty()) return invalid_argument("input 0 (data) must have rank >= 1, got a scalar");
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, int(d.size())));
    INGOT_RETURN_IF_ERROR(check_elements_indices(d, is, a));
    ctx.set_output(0, ctx.input_dtype(0), is);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int r = x.rank();
    int a = int(axis_ < 0 ? axis_ + r : axis_);
    INGOT_ASSIGN_OR_RETURN(auto idx, read_indices(ctx.input(1), x.dim(a), 1, "indices", a));
    Tensor& y = ctx.output(0);
    const Shape& os = y.shape();
    if (y.numel() == 0) return Status::ok();
    auto xs = strides_of(x.shape());
    int64_t last = os[size_t(r - 1)], rows = y.numel() / last;
    dispatch_by_size(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* ip = x.data<T>();
      T* op = y.data<T>();
      parallel_for(rows, last, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          int64_t rem = row, base = 0;
          for (int k = r - 2; k >= 0; --k) {
            int64_t i = rem % os[size_t(k)];
            rem /= os[size_t(k)];
            if (k != a) base += i * xs[size_t(k)];
          }
          const int64_t* ir = idx.data() + row * last;
          T* o = op + row * last;
          if (a == r - 1) {
            for (int64_t j = 0; j < last; ++j) o[j] = ip[base + ir[j]];
          } else {
            for (int64_t j = 0; j < last; ++j) o[j] = ip[base + j + ir[j] * xs[size_t(a)]];
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = 0;
};

// ---------------------------------------------------------------- GatherND
class GatherNDKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    b_ = opset >= 12 ? node.attrs.get_int("batch_dims", 0) : 0;
    if (b_ < 0) return invalid_model("batch_dims must be >= 0, got " + std::to_string(b_));
    return Status::ok();
  }
  Expected<Shape> out_shape(const Shape& d, const Shape& is) const {
    int64_t r = int64_t(d.size()), q = int64_t(is.size());
    if (r < 1 || q < 1) return invalid_argument("data and indices must have rank >= 1");
    if (b_ >= std::min(r, q))
      return invalid_argument("batch_dims " + std::to_string(b_) + " must be less than the ranks of data (" +
                              std::to_string(r) + ") and indices (" + std::to_string(q) + ")");
    for (int64_t k = 0; k < b_; ++k)
      if (d[size_t(k)] != is[size_t(k)])
        return invalid_argument("batch dimension " + std::to_string(k) + " differs: data " + shape_str(d) +
                                ", indices " + shape_str(is));
    int64_t m = is.back();
    if (m < 1 || m > r - b_)
      return invalid_argument("the last dimension of indices (" + std::to_string(m) + ") must be in [1, " +
                              std::to_string(r - b_) + "]");
    Shape out(is.begin(), is.end() - 1);
    out.insert(out.end(), d.begin() + b_ + m, d.end());
    return out;
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    if (ctx.input_dtype(1) != DType::kInt64 && ctx.input_dtype(1) != DType::kInt32)
      return invalid_model("input 1 (indices) must be int64, got " + dtype_name(ctx.input_dtype(1)));
    INGOT_ASSIGN_OR_RETURN(Shape s, out_shape(ctx.input_shape(0), ctx.input_shape(1)));
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    Tensor& y = ctx.output(0);
    const Shape& d = x.shape();
    int64_t m = ind.shape().back();
    size_t b = size_t(b_);
    int64_t batches = prod(d, 0, b);
    int64_t batch_stride = prod(d, b, d.size());
    int64_t tuples = prod(ind.shape(), b, ind.shape().size() - 1);
    int64_t slice = prod(d, b + size_t(m), d.size());
    auto xs = strides_of(d);
    std::vector<int64_t> idx = ind.to_int_vector();
    // Validate and turn each tuple into an element offset within its batch.
    std::vector<int64_t> offs(size_t(batches * tuples));
    for (int64_t t = 0; t < batches * tuples; ++t) {
      int64_t off = 0;
      for (int64_t k = 0; k < m; ++k) {
        int64_t v = idx[size_t(t * m + k)];
        int axis = int(b + size_t(k));
        INGOT_RETURN_IF_ERROR(fix_index(v, d[size_t(axis)], 1, "indices", axis));
        off += v * xs[size_t(axis)];
      }
      offs[size_t(t)] = (t / std::max<int64_t>(tuples, 1)) * batch_stride + off;
    }
    size_t es = dtype_size(x.dtype());
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    size_t bytes = size_t(slice) * es;
    if (bytes == 0) return Status::ok();
    parallel_for(int64_t(offs.size()), slice, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) std::memcpy(dst + t * int64_t(bytes), src + offs[size_t(t)] * int64_t(es), bytes);
    });
    return Status::ok();
  }

 private:
  int64_t b_ = 0;
};

// ---------------------------------------------------------------- Compress
class CompressKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    has_axis_ = node.attrs.has("axis");
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  // Indices along the axis (or the flattened input) that are selected.
  Expected<std::vector<int64_t>> selected(const Tensor& cond, int64_t dim) const {
    if (cond.rank() != 1) return invalid_argument("input 1 (condition) must be 1-D, got shape " + shape_str(cond.shape()));
    std::vector<int64_t> sel;
    for (int64_t i = 0; i < cond.numel(); ++i) {
      if (cond.scalar_as_int(i) == 0) continue;
      if (i >= dim)
        return invalid_argument("input 1 (condition) selects index " + std::to_string(i) + " but the axis has size " +
                                std::to_string(dim));
      sel.push_back(i);
    }
    return sel;
  }
  Expected<int> axis_for(const Shape& s) const {
    if (!has_axis_) return -1;
    return normalize_axis(axis_, int(s.size()));
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    if (ctx.input_dtype(1) != DType::kBool)
      return invalid_model("input 1 (condition) must be bool, got " + dtype_name(ctx.input_dtype(1)));
    INGOT_ASSIGN_OR_RETURN(int a, axis_for(ctx.input_shape(0)));
    if (!ctx.input_value(1)) {
      ctx.set_output_dynamic(0, ctx.input_dtype(0));
      return Status::ok();
    }
    const Shape& s = ctx.input_shape(0);
    INGOT_ASSIGN_OR_RETURN(auto sel, selected(*ctx.input_value(1), a < 0 ? shape_numel(s) : s[size_t(a)]));
    Shape out = a < 0 ? Shape{int64_t(sel.size())} : s;
    if (a >= 0) out[size_t(a)] = int64_t(sel.size());
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(int a, axis_for(x.shape()));
    Shape s = a < 0 ? Shape{x.numel()} : x.shape();
    if (a < 0) a = 0;
    INGOT_ASSIGN_OR_RETURN(auto sel, selected(ctx.input(1), s[size_t(a)]));
    Shape out = s;
    out[size_t(a)] = int64_t(sel.size());
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    size_t es = dtype_size(x.dtype());
    int64_t outer = prod(s, 0, size_t(a));
    int64_t inner = prod(s, size_t(a) + 1, s.size()) * int64_t(es);
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    int64_t n = int64_t(sel.size());
    if (inner == 0) return Status::ok();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(dst + (o * n + j) * inner, src + (o * s[size_t(a)] + sel[size_t(j)]) * inner, size_t(inner));
    return Status::ok();
  }

 private:
  bool has_axis_ = false;
  int64_t axis_ = 0;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Gather, tensor_ops::GatherKernel);
INGOT_REGISTER_KERNEL(cpu, "", GatherElements, tensor_ops::GatherElementsKernel);
INGOT_REGISTER_KERNEL(cpu, "", GatherND, tensor_ops::GatherNDKernel);
INGOT_REGISTER_KERNEL(cpu, "", Compress, tensor_ops::CompressKernel);

}  // namespace ingot
