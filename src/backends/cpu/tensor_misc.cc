// Trilu, OneHot, NonZero, ReverseSequence and CumSum.
#include <cmath>

#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

// ---------------------------------------------------------------- Trilu
class TriluKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    upper_ = node.attrs.get_int("upper", 1) != 0;
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    if (ctx.input_rank(0) < 2)
      return invalid_argument("input 0 (input) must have rank >= 2, got shape " + shape_str(ctx.input_shape(0)));
    if (ctx.has_input(1)) {
      if (ctx.input_dtype(1) != DType::kInt64)
        return invalid_model("input 1 (k) must be int64, got " + dtype_name(ctx.input_dtype(1)));
      if (shape_numel(ctx.input_shape(1)) != 1)
        return invalid_argument("input 1 (k) must be a scalar, got shape " + shape_str(ctx.input_shape(1)));
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    int r = x.rank();
    int64_t n = x.dim(r - 2), m = x.dim(r - 1);
    int64_t k = ctx.has_input(1) ? ctx.input(1).scalar_as_int() : 0;
    k = std::clamp<int64_t>(k, -(n + m + 1), n + m + 1);
    size_t es = dtype_size(x.dtype());
    int64_t mats = (n > 0 && m > 0) ? x.numel() / (n * m) : 0;
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    parallel_for(mats * n, m, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t i = row % n;
        // kept columns [lo, hi)
        int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, m) : 0;
        int64_t hi = upper_ ? m : std::clamp<int64_t>(i + k + 1, 0, m);
        if (hi > lo) std::memcpy(dst + (row * m + lo) * int64_t(es), src + (row * m + lo) * int64_t(es), size_t(hi - lo) * es);
      }
    });
    return Status::ok();
  }

 private:
  bool upper_ = true;
};

// ---------------------------------------------------------------- OneHot
class OneHotKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", -1);
    return Status::ok();
  }
  static Expected<int64_t> depth_of(const Tensor& t) {
    if (t.numel() != 1) return invalid_argument("input 1 (depth) must be a scalar, got shape " + shape_str(t.shape()));
    double d = t.scalar_as_double();
    if (!(d >= 1) || d > double(int64_t(1) << 40))
      return invalid_argument("input 1 (depth) must be positive, got " + std::to_string(d));
    return int64_t(d);
  }
  Expected<int> axis_for(int r) const {
    if (axis_ < -(r + 1) || axis_ > r)
      return invalid_argument("axis " + std::to_string(axis_) + " is out of range for output rank " + std::to_string(r + 1));
    return int(axis_ < 0 ? axis_ + r + 1 : axis_);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 3, 3));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 2, "values"));
    for (int i = 0; i < 2; ++i)
      if (!dtype_is_integer(ctx.input_dtype(i)) && !dtype_is_float(ctx.input_dtype(i)))
        return invalid_model("input " + std::to_string(i) + " must be numeric, got " + dtype_name(ctx.input_dtype(i)));
    if (shape_numel(ctx.input_shape(2)) != 2)
      return invalid_argument("input 2 (values) must have 2 elements [off, on], got shape " + shape_str(ctx.input_shape(2)));
    INGOT_ASSIGN_OR_RETURN(int a, axis_for(ctx.input_rank(0)));
    if (!ctx.input_value(1)) {
      ctx.set_output_dynamic(0, ctx.input_dtype(2));
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(int64_t depth, depth_of(*ctx.input_value(1)));
    Shape out = ctx.input_shape(0);
    out.insert(out.begin() + a, depth);
    INGOT_RETURN_IF_ERROR(check_output_size(out, 1));
    ctx.set_output(0, ctx.input_dtype(2), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& ind = ctx.input(0);
    const Tensor& vals = ctx.input(2);
    INGOT_ASSIGN_OR_RETURN(int a, axis_for(ind.rank()));
    INGOT_ASSIGN_OR_RETURN(int64_t depth, depth_of(ctx.input(1)));
    Shape out = ind.shape();
    out.insert(out.begin() + a, depth);
    Tensor& y = ctx.allocate_output(0, vals.dtype(), out);
    int64_t outer = prod(ind.shape(), 0, size_t(a));
    int64_t inner = prod(ind.shape(), size_t(a), ind.shape().size());
    size_t es = dtype_size(vals.dtype());
    const uint8_t* v = static_cast<const uint8_t*>(vals.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    fill_bytes(dst, y.numel(), v, es);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double fi = ind.scalar_as_double(o * inner + i);
        if (!(std::fabs(fi) < double(depth) + 1)) continue;  // NaN or far out of range: all "off"
        int64_t idx = int64_t(fi);
        if (idx < 0) idx += depth;
        if (idx < 0 || idx >= depth) continue;  // out of range: all "off", as the spec says
        std::memcpy(dst + ((o * depth + idx) * inner + i) * int64_t(es), v + es, es);
      }
    return Status::ok();
  }

 private:
  int64_t axis_ = -1;
};

// ---------------------------------------------------------------- NonZero
class NonZeroKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "X"));
    ctx.set_output_dynamic(0, DType::kInt64);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape s = x.rank() == 0 ? Shape{1} : x.shape();  // a scalar counts as 1-D, as numpy does
    int r = int(s.size());
    std::vector<int64_t> hits;
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i)
        if (is_nonzero(p[i])) hits.push_back(i);
    });
    int64_t n = int64_t(hits.size());
    Tensor& y = ctx.allocate_output(0, DType::kInt64, {r, n});
    int64_t* o = y.data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t rem = hits[size_t(j)];
      for (int k = r - 1; k >= 0; --k) {
        o[k * n + j] = rem % s[size_t(k)];
        rem /= s[size_t(k)];
      }
    }
    return Status::ok();
  }
};

// ---------------------------------------------------------------- ReverseSequence
class ReverseSequenceKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    time_axis_ = node.attrs.get_int("time_axis", 0);
    batch_axis_ = node.attrs.get_int("batch_axis", 1);
    if (!((time_axis_ == 0 && batch_axis_ == 1) || (time_axis_ == 1 && batch_axis_ == 0)))
      return invalid_model("time_axis and batch_axis must be 0 and 1 in some order, got " + std::to_string(time_axis_) +
                           " and " + std::to_string(batch_axis_));
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "sequence_lens"));
    const Shape& s = ctx.input_shape(0);
    if (s.size() < 2) return invalid_argument("input 0 (input) must have rank >= 2, got shape " + shape_str(s));
    if (ctx.input_shape(1) != Shape{s[size_t(batch_axis_)]})
      return invalid_argument("input 1 (sequence_lens) has shape " + shape_str(ctx.input_shape(1)) + ", expected " +
                              std::to_string(s[size_t(batch_axis_)]));
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    auto lens = ctx.input(1).to_int_vector();
    int64_t T = x.dim(int(time_axis_)), B = x.dim(int(batch_axis_));
    for (int64_t b = 0; b < B; ++b)
      if (lens[size_t(b)] < 0 || lens[size_t(b)] > T)
        return invalid_argument("input 1 (sequence_lens) value " + std::to_string(lens[size_t(b)]) + " for batch " +
                                std::to_string(b) + " is out of range [0, " + std::to_string(T) + "]");
    size_t es = dtype_size(x.dtype());
    int64_t inner = prod(x.shape(), 2, x.shape().size()) * int64_t(es);
    auto off = [&](int64_t t, int64_t b) { return (time_axis_ == 0 ? t * B + b : b * T + t) * inner; };
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    if (inner == 0) return Status::ok();
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = lens[size_t(b)];
      for (int64_t t = 0; t < T; ++t) {
        int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(dst + off(t, b), src + off(from, b), size_t(inner));
      }
    }
    return Status::ok();
  }

 private:
  int64_t time_axis_ = 0, batch_axis_ = 1;
};

// ---------------------------------------------------------------- CumSum
class CumSumKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    exclusive_ = node.attrs.get_int("exclusive", 0) != 0;
    reverse_ = node.attrs.get_int("reverse", 0) != 0;
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
    DType t = ctx.input_dtype(0);
    if (!dtype_is_integer(t) && !dtype_is_float(t))
      return unsupported("input 0 (x) has dtype " + dtype_name(t) + "; CumSum needs a numeric type");
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "axis"));
    if (shape_numel(ctx.input_shape(1)) != 1)
      return invalid_argument("input 1 (axis) must be a scalar, got shape " + shape_str(ctx.input_shape(1)));
    if (ctx.input_rank(0) == 0) return invalid_argument("input 0 (x) must have rank >= 1, got a scalar");
    if (const Tensor* a = ctx.input_value(1)) INGOT_RETURN_IF_ERROR(normalize_axis(a->scalar_as_int(), ctx.input_rank(0)).status());
    ctx.set_output(0, t, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(ctx.input(1).scalar_as_int(), x.rank()));
    int64_t outer = prod(x.shape(), 0, size_t(a)), n = x.dim(a);
    int64_t inner = prod(x.shape(), size_t(a) + 1, x.shape().size());
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = decltype(arith(T()));
      const T* ip = x.data<T>();
      T* op = y.data<T>();
      parallel_for(outer, n * inner, [&](int64_t b, int64_t e) {
        std::vector<A> acc(static_cast<size_t>(inner));
        for (int64_t o = b; o < e; ++o) {
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t s = 0; s < n; ++s) {
            int64_t k = reverse_ ? n - 1 - s : s;
            const T* in = ip + (o * n + k) * inner;
            T* out = op + (o * n + k) * inner;
            for (int64_t i = 0; i < inner; ++i) {
              A v = arith(in[i]);
              if (exclusive_) {
                out[i] = T(acc[size_t(i)]);
                acc[size_t(i)] = A(acc[size_t(i)] + v);
              } else {
                acc[size_t(i)] = A(acc[size_t(i)] + v);
                out[i] = T(acc[size_t(i)]);
              }
            }
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Trilu, tensor_ops::TriluKernel);
INGOT_REGISTER_KERNEL(cpu, "", OneHot, tensor_ops::OneHotKernel);
INGOT_REGISTER_KERNEL(cpu, "", NonZero, tensor_ops::NonZeroKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReverseSequence, tensor_ops::ReverseSequenceKernel);
INGOT_REGISTER_KERNEL(cpu, "", CumSum, tensor_ops::CumSumKernel);

}  // namespace ingot
