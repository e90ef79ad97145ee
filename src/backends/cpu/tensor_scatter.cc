// ScatterND, ScatterElements and the deprecated Scatter: the output is a copy of data with
// updates written (or combined by `reduction`) at the indexed positions. Indices are checked
// before anything is written. Updates apply in order, so duplicate indices behave as in the
// ONNX reference (last write wins for reduction = none).
#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Expected<Reduction> parse_reduction(const Node& node, int opset, int add_mul_opset, int max_min_opset) {
  std::string r = node.attrs.get_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (opset >= add_mul_opset && r == "add") return Reduction::kAdd;
  if (opset >= add_mul_opset && r == "mul") return Reduction::kMul;
  if (opset >= max_min_opset && r == "max") return Reduction::kMax;
  if (opset >= max_min_opset && r == "min") return Reduction::kMin;
  return invalid_model("reduction '" + r + "' is not valid at opset " + std::to_string(opset));
}

template <class T> inline void combine(T& dst, T v, Reduction red) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (red) {
      case Reduction::kNone: dst = v; break;
      case Reduction::kAdd: case Reduction::kMax: dst = dst || v; break;
      case Reduction::kMul: case Reduction::kMin: dst = dst && v; break;
    }
  } else {
    auto a = arith(dst), b = arith(v);
    using A = decltype(a);
    switch (red) {
      case Reduction::kNone: dst = v; return;
      case Reduction::kAdd: a = A(a + b); break;
      case Reduction::kMul: a = A(a * b); break;
      case Reduction::kMax: a = std::max(a, b); break;
      case Reduction::kMin: a = std::min(a, b); break;
    }
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) dst = T(a);
    else dst = a;
  }
}

// ---------------------------------------------------------------- ScatterND
class ScatterNDKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    INGOT_ASSIGN_OR_RETURN(red_, parse_reduction(node, opset, 16, 18));
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 3, 3));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "indices"));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
    const Shape& d = ctx.input_shape(0);
    const Shape& is = ctx.input_shape(1);
    const Shape& us = ctx.input_shape(2);
    if (d.empty() || is.empty()) return invalid_argument("data and indices must have rank >= 1");
    int64_t m = is.back();
    if (m < 1 || m > int64_t(d.size()))
      return invalid_argument("the last dimension of indices (" + std::to_string(m) + ") must be in [1, " +
                              std::to_string(d.size()) + "]");
    Shape want(is.begin(), is.end() - 1);
    want.insert(want.end(), d.begin() + m, d.end());
    if (us != want)
      return invalid_argument("input 2 (updates) has shape " + shape_str(us) + ", expected " + shape_str(want) +
                              " for data " + shape_str(d) + " and indices " + shape_str(is));
    ctx.set_output(0, ctx.input_dtype(0), d);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    const Shape& d = x.shape();
    int64_t m = ind.shape().back();
    int64_t tuples = ind.numel() / m;
    int64_t slice = prod(d, size_t(m), d.size());
    auto xs = strides_of(d);
    std::vector<int64_t> idx = ind.to_int_vector();
    std::vector<int64_t> offs(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t k = 0; k < m; ++k) {
        int64_t v = idx[size_t(t * m + k)];
        INGOT_RETURN_IF_ERROR(fix_index(v, d[size_t(k)], 1, "indices", int(k)));
        off += v * xs[size_t(k)];
      }
      offs[size_t(t)] = off;
    }
    Tensor& y = ctx.output(0);
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = y.data<T>();
      const T* u = upd.data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        T* dst = o + offs[size_t(t)];
        const T* src = u + t * slice;
        if (red_ == Reduction::kNone) {
          std::memcpy(dst, src, size_t(slice) * sizeof(T));
        } else {
          for (int64_t j = 0; j < slice; ++j) combine(dst[j], src[j], red_);
        }
      }
    });
    return Status::ok();
  }

 private:
  Reduction red_ = Reduction::kNone;
};

// ---------------------------------------------------------------- ScatterElements / Scatter
class ScatterElementsKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 0);
    if (node.op_type == "Scatter") {
      red_ = Reduction::kNone;
    } else {
      INGOT_ASSIGN_OR_RETURN(red_, parse_reduction(node, opset, 16, 18));
    }
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 3, 3));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "indices"));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
    const Shape& d = ctx.input_shape(0);
    const Shape& is = ctx.input_shape(1);
    if (d.empty()) return invalid_argument("input 0 (data) must have rank >= 1, got a scalar");
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, int(d.size())));
    if (ctx.input_shape(2) != is)
      return invalid_argument("input 2 (updates) has shape " + shape_str(ctx.input_shape(2)) +
                              " but input 1 (indices) has shape " + shape_str(is));
    INGOT_RETURN_IF_ERROR(check_elements_indices(d, is, a));
    ctx.set_output(0, ctx.input_dtype(0), d);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& upd = ctx.input(2);
    int r = x.rank();
    int a = int(axis_ < 0 ? axis_ + r : axis_);
    INGOT_ASSIGN_OR_RETURN(auto idx, read_indices(ctx.input(1), x.dim(a), 1, "indices", a));
    Tensor& y = ctx.output(0);
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    if (upd.numel() == 0) return Status::ok();
    const Shape& is = upd.shape();
    auto xs = strides_of(x.shape());
    int64_t last = is[size_t(r - 1)], rows = upd.numel() / last;
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = y.data<T>();
      const T* u = upd.data<T>();
      for (int64_t row = 0; row < rows; ++row) {
        int64_t rem = row, base = 0;
        for (int k = r - 2; k >= 0; --k) {
          int64_t i = rem % is[size_t(k)];
          rem /= is[size_t(k)];
          if (k != a) base += i * xs[size_t(k)];
        }
        const int64_t* ir = idx.data() + row * last;
        const T* ur = u + row * last;
        for (int64_t j = 0; j < last; ++j) {
          int64_t off = a == r - 1 ? base + ir[j] : base + j + ir[j] * xs[size_t(a)];
          combine(o[off], ur[j], red_);
        }
      }
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = 0;
  Reduction red_ = Reduction::kNone;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", ScatterND, tensor_ops::ScatterNDKernel);
INGOT_REGISTER_KERNEL(cpu, "", ScatterElements, tensor_ops::ScatterElementsKernel);
INGOT_REGISTER_KERNEL(cpu, "", Scatter, tensor_ops::ScatterElementsKernel);

}  // namespace ingot
