// Shape-only ops that alias their input (Reshape, Flatten, Squeeze, Unsqueeze), ops that
// describe a shape (Shape, Size), and ops that make tensors from attributes or scalars
// (Constant, ConstantOfShape, Range, EyeLike).
#include <cmath>
#include <limits>

#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

// ---------------------------------------------------------------- Reshape
Expected<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  int64_t in_n = shape_numel(in);
  auto fail = [&](const std::string& why) {
    return invalid_argument("cannot reshape " + shape_str(in) + " (" + std::to_string(in_n) + " elements) to " +
                            ints_str(spec) + ": " + why);
  };
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (infer_at >= 0) return fail("more than one dimension is -1");
      infer_at = int(i);
      continue;
    }
    if (v < -1) return fail("dimension " + std::to_string(i) + " is " + std::to_string(v));
    if (v == 0 && !allowzero) {
      if (i >= in.size()) return fail("dimension " + std::to_string(i) + " is 0 (copy) but the input has rank " +
                                      std::to_string(in.size()));
      v = in[i];
    }
    out[i] = v;
    known *= v;
  }
  if (infer_at >= 0) {
    if (known == 0) {
      if (in_n != 0) return fail("the other dimensions multiply to 0");
      return fail("the -1 dimension is ambiguous when other dimensions are 0");
    }
    if (in_n % known != 0) return fail("the element count is not divisible by " + std::to_string(known));
    out[size_t(infer_at)] = in_n / known;
  } else if (known != in_n) {
    return invalid_argument("cannot reshape " + shape_str(in) + " (" + std::to_string(in_n) + " elements) to " +
                            shape_str(out) + " (" + std::to_string(known) + " elements)");
  }
  return out;
}

class ReshapeKernel : public OpKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
  Status init(const Node& node, int opset) override {
    from_attr_ = opset < 5;
    attr_shape_ = node.attrs.get_ints("shape");
    allowzero_ = opset >= 14 && node.attrs.get_int("allowzero", 0) != 0;
    return Status::ok();
  }
  Expected<Shape> target(const Shape& in, const Tensor* spec) const {
    if (from_attr_) return reshape_target(in, attr_shape_, false);
    INGOT_ASSIGN_OR_RETURN(auto v, read_int_list(*spec, 1, "shape"));
    return reshape_target(in, v, allowzero_);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, from_attr_ ? 1 : 2, from_attr_ ? 1 : 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    if (!from_attr_) {
      INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "shape"));
      if (!ctx.input_value(1)) {
        ctx.set_output_dynamic(0, ctx.input_dtype(0));
        return Status::ok();
      }
    }
    INGOT_ASSIGN_OR_RETURN(Shape s, target(ctx.input_shape(0), ctx.input_value(1)));
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(Shape s, target(ctx.input(0).shape(), from_attr_ ? nullptr : &ctx.input(1)));
    ctx.set_output(0, ctx.input(0).reshaped(s));
    return Status::ok();
  }

 private:
  bool from_attr_ = false, allowzero_ = false;
  std::vector<int64_t> attr_shape_;
};

// ---------------------------------------------------------------- Flatten
class FlattenKernel : public OpKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 1);
    return Status::ok();
  }
  Expected<Shape> out_shape(const Shape& in) const {
    int64_t r = int64_t(in.size());
    if (axis_ < -r || axis_ > r)
      return invalid_argument("axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(r));
    size_t a = size_t(axis_ < 0 ? axis_ + r : axis_);
    return Shape{prod(in, 0, a), prod(in, a, in.size())};
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    INGOT_ASSIGN_OR_RETURN(Shape s, out_shape(ctx.input_shape(0)));
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(Shape s, out_shape(ctx.input(0).shape()));
    ctx.set_output(0, ctx.input(0).reshaped(s));
    return Status::ok();
  }

 private:
  int64_t axis_ = 1;
};

// ---------------------------------------------------------------- Squeeze / Unsqueeze
class SqueezeKernel : public OpKernel {
 public:
  int output_aliases_input(int output) const override { return output == 0 ? 0 : -1; }
  explicit SqueezeKernel(bool unsqueeze) : unsqueeze_(unsqueeze) {}
  Status init(const Node& node, int opset) override {
    from_attr_ = opset < 13;
    has_attr_ = node.attrs.has("axes");
    axes_attr_ = node.attrs.get_ints("axes");
    if (unsqueeze_ && from_attr_ && !has_attr_) return invalid_model("attribute 'axes' is required");
    return Status::ok();
  }
  // axes: nullptr means "not given".
  Expected<Shape> out_shape(const Shape& in, const std::vector<int64_t>* axes) const {
    int r = int(in.size());
    if (unsqueeze_) {
      int out_r = r + int(axes->size());
      std::vector<bool> is_new(size_t(out_r), false);
      for (int64_t a : *axes) {
        INGOT_ASSIGN_OR_RETURN(int n, normalize_axis(a, out_r, "axes entry"));
        if (is_new[size_t(n)]) return invalid_argument("axes " + ints_str(*axes) + " has a repeated axis");
        is_new[size_t(n)] = true;
      }
      Shape out;
      size_t k = 0;
      for (int i = 0; i < out_r; ++i) out.push_back(is_new[size_t(i)] ? 1 : in[k++]);
      return out;
    }
    std::vector<bool> drop(size_t(r), false);
    if (!axes || axes->empty()) {
      for (int i = 0; i < r; ++i) drop[size_t(i)] = in[size_t(i)] == 1;
    } else {
      for (int64_t a : *axes) {
        INGOT_ASSIGN_OR_RETURN(int n, normalize_axis(a, r, "axes entry"));
        if (r == 0) return invalid_argument("cannot squeeze axis " + std::to_string(a) + " of a scalar");
        if (in[size_t(n)] != 1)
          return invalid_argument("cannot squeeze axis " + std::to_string(a) + " of shape " + shape_str(in) +
                                  ": its size is " + std::to_string(in[size_t(n)]) + ", not 1");
        drop[size_t(n)] = true;
      }
    }
    Shape out;
    for (int i = 0; i < r; ++i)
      if (!drop[size_t(i)]) out.push_back(in[size_t(i)]);
    return out;
  }
  Expected<Shape> shape_for(const Shape& in, const Tensor* axes_input) const {
    if (from_attr_) return out_shape(in, has_attr_ ? &axes_attr_ : nullptr);
    if (!axes_input) return out_shape(in, nullptr);
    INGOT_ASSIGN_OR_RETURN(auto axes, read_int_list(*axes_input, 1, "axes"));
    return out_shape(in, &axes);
  }
  Status infer(InferContext& ctx) const override {
    int req = (!from_attr_ && unsqueeze_) ? 2 : 1;
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, req, from_attr_ ? 1 : 2));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    if (!from_attr_ && ctx.has_input(1)) {
      INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "axes"));
      if (!ctx.input_value(1)) {
        ctx.set_output_dynamic(0, ctx.input_dtype(0));
        return Status::ok();
      }
    }
    INGOT_ASSIGN_OR_RETURN(Shape s, shape_for(ctx.input_shape(0), ctx.has_input(1) ? ctx.input_value(1) : nullptr));
    ctx.set_output(0, ctx.input_dtype(0), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor* axes = (!from_attr_ && ctx.has_input(1)) ? &ctx.input(1) : nullptr;
    INGOT_ASSIGN_OR_RETURN(Shape s, shape_for(ctx.input(0).shape(), axes));
    ctx.set_output(0, ctx.input(0).reshaped(s));
    return Status::ok();
  }

 private:
  bool unsqueeze_;
  bool from_attr_ = false, has_attr_ = false;
  std::vector<int64_t> axes_attr_;
};
class SqueezeOnly : public SqueezeKernel {
 public:
  SqueezeOnly() : SqueezeKernel(false) {}
};
class UnsqueezeKernel : public SqueezeKernel {
 public:
  UnsqueezeKernel() : SqueezeKernel(true) {}
};

// ---------------------------------------------------------------- Shape / Size
class ShapeKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    start_ = node.attrs.get_int("start", 0);
    has_end_ = node.attrs.has("end");
    end_ = node.attrs.get_int("end", 0);
    return Status::ok();
  }
  std::pair<int64_t, int64_t> range(int64_t r) const {
    auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    int64_t s = clampi(start_), e = has_end_ ? clampi(end_) : r;
    return {s, std::max(s, e)};
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    auto [s, e] = range(ctx.input_rank(0));
    ctx.set_output(0, DType::kInt64, {e - s});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Shape& in = ctx.input(0).shape();
    auto [s, e] = range(int64_t(in.size()));
    Tensor& y = ctx.output(0);
    for (int64_t i = s; i < e; ++i) y.data<int64_t>()[i - s] = in[size_t(i)];
    return Status::ok();
  }
  bool reads_input_data(int) const override { return false; }

 private:
  int64_t start_ = 0, end_ = 0;
  bool has_end_ = false;
};

class SizeKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    ctx.set_output(0, DType::kInt64, {});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    ctx.output(0).data<int64_t>()[0] = shape_numel(ctx.input(0).shape());
    return Status::ok();
  }
  bool reads_input_data(int) const override { return false; }
};

// ---------------------------------------------------------------- Constant
class ConstantKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    int count = 0;
    for (const auto& [name, a] : node.attrs.all()) {
      if (name == "value") {
        if (a.kind != Attribute::Kind::kTensor) return invalid_model("attribute 'value' must be a tensor");
        if (!dtype_is_supported(a.t.dtype()))
          return unsupported("attribute 'value' has dtype " + dtype_name(a.t.dtype()) + ", which ingot does not support");
        value_ = a.t;
      } else if (name == "value_float") {
        value_ = Tensor(DType::kFloat32, {});
        value_.data<float>()[0] = a.f;
      } else if (name == "value_floats") {
        value_ = Tensor(DType::kFloat32, {int64_t(a.floats.size())});
        std::copy(a.floats.begin(), a.floats.end(), value_.data<float>());
      } else if (name == "value_int") {
        value_ = Tensor(DType::kInt64, {});
        value_.data<int64_t>()[0] = a.i;
      } else if (name == "value_ints") {
        value_ = Tensor(DType::kInt64, {int64_t(a.ints.size())});
        std::copy(a.ints.begin(), a.ints.end(), value_.data<int64_t>());
      } else if (name == "value_string" || name == "value_strings") {
        return unsupported("attribute '" + name + "': string tensors are not supported");
      } else if (name == "sparse_value") {
        return unsupported("attribute 'sparse_value': sparse tensors are not supported");
      } else {
        continue;
      }
      ++count;
    }
    if (count != 1)
      return invalid_model("needs exactly one of the value attributes, got " + std::to_string(count));
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    ctx.set_output(0, value_.dtype(), value_.shape());
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    ctx.set_output(0, value_);
    return Status::ok();
  }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- ConstantOfShape
class ConstantOfShapeKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    if (const Tensor* t = node.attrs.get_tensor("value")) {
      if (t->numel() != 1)
        return invalid_model("attribute 'value' must have one element, got shape " + shape_str(t->shape()));
      if (!dtype_is_supported(t->dtype()))
        return unsupported("attribute 'value' has dtype " + dtype_name(t->dtype()) + ", which ingot does not support");
      value_ = *t;
    } else {
      value_ = Tensor(DType::kFloat32, {1});
    }
    return Status::ok();
  }
  static Expected<Shape> shape_of(const Tensor& t) {
    INGOT_ASSIGN_OR_RETURN(auto v, read_int_list(t, 0, "shape"));
    for (int64_t d : v)
      if (d < 0) return invalid_argument("input 0 (shape) " + ints_str(v) + " has a negative dimension");
    INGOT_RETURN_IF_ERROR(check_output_size(v, 1));
    return Shape(v);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 0, "shape"));
    if (!ctx.input_value(0)) {
      ctx.set_output_dynamic(0, value_.dtype());
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Shape s, shape_of(*ctx.input_value(0)));
    ctx.set_output(0, value_.dtype(), s);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(Shape s, shape_of(ctx.input(0)));
    Tensor& y = ctx.allocate_output(0, value_.dtype(), s);
    fill_bytes(static_cast<uint8_t*>(y.raw()), y.numel(), value_.raw(), dtype_size(value_.dtype()));
    return Status::ok();
  }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- Range
class RangeKernel : public OpKernel {
 public:
  static Expected<int64_t> count(const Tensor& s, const Tensor& l, const Tensor& d) {
    const char* names[3] = {"start", "limit", "delta"};
    const Tensor* ts[3] = {&s, &l, &d};
    for (int i = 0; i < 3; ++i)
      if (ts[i]->numel() != 1)
        return invalid_argument(input_desc(i, names[i]) + " must be a scalar, got shape " + shape_str(ts[i]->shape()));
    double n;
    if (dtype_is_integer(s.dtype())) {
      int64_t a = s.scalar_as_int(), b = l.scalar_as_int(), c = d.scalar_as_int();
      if (c == 0) return invalid_argument("input 2 (delta) is 0");
      __int128 diff = __int128(b) - a;
      __int128 q = diff / c;
      if (diff % c != 0 && ((diff < 0) == (c < 0))) ++q;  // ceil
      n = q > 0 ? double(q) : 0.0;
    } else {
      double a = s.scalar_as_double(), b = l.scalar_as_double(), c = d.scalar_as_double();
      if (c == 0) return invalid_argument("input 2 (delta) is 0");
      n = std::ceil((b - a) / c);
      if (!std::isfinite(n)) return invalid_argument("start, limit and delta give a non-finite element count");
      n = std::max(n, 0.0);
    }
    if (n > double(int64_t(1) << 40)) return invalid_argument("Range would produce " + std::to_string(n) + " elements");
    return int64_t(n);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 3, 3));
    DType t = ctx.input_dtype(0);
    if (!dtype_is_integer(t) && !dtype_is_float(t))
      return invalid_model("input 0 (start) must be numeric, got " + dtype_name(t));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
    if (!ctx.input_value(0) || !ctx.input_value(1) || !ctx.input_value(2)) {
      ctx.set_output_dynamic(0, t);
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(int64_t n, count(*ctx.input_value(0), *ctx.input_value(1), *ctx.input_value(2)));
    ctx.set_output(0, t, {n});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& s = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(int64_t n, count(s, ctx.input(1), ctx.input(2)));
    Tensor& y = ctx.allocate_output(0, s.dtype(), {n});
    dispatch_numeric(s.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = y.data<T>();
      if constexpr (std::is_integral_v<T>) {
        T a = s.data<T>()[0], d = ctx.input(2).data<T>()[0];
        for (int64_t i = 0; i < n; ++i) o[i] = T(a + T(i) * d);
      } else {
        double a = arith(s.data<T>()[0]), d = arith(ctx.input(2).data<T>()[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = from_double<T>(a + double(i) * d);
      }
    });
    return Status::ok();
  }
};

// ---------------------------------------------------------------- EyeLike
class EyeLikeKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    k_ = node.attrs.get_int("k", 0);
    if (node.attrs.has("dtype")) {
      dtype_ = DType(node.attrs.get_int("dtype", 1));
      if (!dtype_is_supported(dtype_)) return unsupported("dtype " + dtype_name(dtype_) + " is not supported");
    }
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    if (ctx.input_rank(0) != 2) return invalid_argument("input must be 2-D, got shape " + shape_str(ctx.input_shape(0)));
    DType t = dtype_ == DType::kUndefined ? ctx.input_dtype(0) : dtype_;
    if (!dtype_is_supported(t)) return unsupported("dtype " + dtype_name(t) + " is not supported");
    ctx.set_output(0, t, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    Tensor& y = ctx.output(0);
    int64_t rows = y.dim(0), cols = y.dim(1);
    dispatch_all(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T one = from_double<T>(1.0);
      T* o = y.data<T>();
      for (int64_t i = 0; i < rows; ++i) {
        int64_t j = i + k_;
        if (j >= 0 && j < cols) o[i * cols + j] = one;
      }
    });
    return Status::ok();
  }
  bool reads_input_data(int) const override { return false; }

 private:
  int64_t k_ = 0;
  DType dtype_ = DType::kUndefined;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Reshape, tensor_ops::ReshapeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Flatten, tensor_ops::FlattenKernel);
INGOT_REGISTER_KERNEL(cpu, "", Squeeze, tensor_ops::SqueezeOnly);
INGOT_REGISTER_KERNEL(cpu, "", Unsqueeze, tensor_ops::UnsqueezeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Shape, tensor_ops::ShapeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Size, tensor_ops::SizeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Constant, tensor_ops::ConstantKernel);
INGOT_REGISTER_KERNEL(cpu, "", ConstantOfShape, tensor_ops::ConstantOfShapeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Range, tensor_ops::RangeKernel);
INGOT_REGISTER_KERNEL(cpu, "", EyeLike, tensor_ops::EyeLikeKernel);

}  // namespace ingot
