// QuantizeLinear / DequantizeLinear (per-tensor, per-axis, and opset-21 blocked quantization;
// 8- and 16-bit integers) and DynamicQuantizeLinear.
#include <cmath>
#include <limits>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

// Scales as float and zero points as int64 (0 where there is no zero-point input).
std::pair<std::vector<float>, std::vector<int64_t>> read_scales(const Tensor& S, const Tensor* Z) {
  std::vector<float> scale(size_t(S.numel()));
  for (int64_t i = 0; i < S.numel(); ++i) scale[size_t(i)] = float(S.scalar_as_double(i));
  std::vector<int64_t> zp(size_t(S.numel()), 0);
  if (Z) for (int64_t i = 0; i < Z->numel() && i < S.numel(); ++i) zp[size_t(i)] = Z->scalar_as_int(i);
  return {std::move(scale), std::move(zp)};
}

template <class F> bool dispatch_qtype(DType t, F&& f) {
  switch (t) {
    case DType::kInt8: f(TypeTag<int8_t>{}); return true;
    case DType::kUInt8: f(TypeTag<uint8_t>{}); return true;
    case DType::kInt16: f(TypeTag<int16_t>{}); return true;
    case DType::kUInt16: f(TypeTag<uint16_t>{}); return true;
    default: return false;
  }
}

// Where element i of x finds its scale/zero point.
struct ParamMap {
  int64_t mode = 0;  // 0 per-tensor, 1 per-axis, 2 blocked
  int64_t D = 1, inner = 1, block = 0, Db = 1;
  int64_t operator()(int64_t i) const {
    if (mode == 0) return 0;
    int64_t a = (i / inner) % D;
    if (mode == 1) return a;
    int64_t outer = i / (D * inner), in = i % inner;
    return (outer * Db + a / block) * inner + in;
  }
};

// Validates scale (and zero point) shapes against x for the given axis/block_size.
Status make_param_map(const Shape& x, const Shape& scale, const Shape* zp, int64_t axis_attr, int64_t block,
                      const char* scale_name, ParamMap& pm) {
  if (zp && *zp != scale)
    return invalid_argument(std::string("zero point shape ") + shape_str(*zp) + " differs from " + scale_name +
                            " shape " + shape_str(scale));
  int64_t n = shape_numel(scale);
  if (block <= 0 && (scale.empty() || (scale.size() == 1 && n == 1))) {
    pm.mode = 0;
    return Status::ok();
  }
  INGOT_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_attr, int(x.size())));
  pm.D = x[size_t(axis)];
  pm.inner = shape_numel(Shape(x.begin() + axis + 1, x.end()));
  if (block <= 0) {
    if (scale.size() != 1 || scale[0] != pm.D)
      return invalid_argument(std::string(scale_name) + " has shape " + shape_str(scale) + "; per-axis quantization along axis " +
                              std::to_string(axis) + " needs [" + std::to_string(pm.D) + "] (x is " + shape_str(x) + ")");
    pm.mode = 1;
    return Status::ok();
  }
  pm.mode = 2;
  pm.block = block;
  pm.Db = (pm.D + block - 1) / block;
  Shape want = x;
  want[size_t(axis)] = pm.Db;
  if (scale != want)
    return invalid_argument(std::string(scale_name) + " has shape " + shape_str(scale) + "; blocked quantization with block_size=" +
                            std::to_string(block) + " needs " + shape_str(want));
  return Status::ok();
}

class QuantizeLinearKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 1);
    block_ = node.attrs.get_int("block_size", 0);
    if (block_ < 0) return invalid_model("block_size=" + std::to_string(block_) + " must be >= 0");
    saturate_ = node.attrs.get_int("saturate", 1) != 0;
    output_dtype_ = DType(node.attrs.get_int("output_dtype", 0));
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 or 3 inputs (x, y_scale, y_zero_point), got " + std::to_string(ctx.num_inputs()));
    DType xt = ctx.input_dtype(0), st = ctx.input_dtype(1);
    if (!dtype_is_float(xt) && xt != DType::kInt32)
      return unsupported("input 0 (x) has dtype " + dtype_name(xt) + "; expected a float type or int32");
    if (!dtype_is_float(st)) return invalid_model("input 1 (y_scale) has dtype " + dtype_name(st) + ", expected a float type");
    DType yt = DType::kUInt8;
    if (ctx.has_input(2)) yt = ctx.input_dtype(2);
    else if (output_dtype_ != DType::kUndefined) yt = output_dtype_;
    if (ctx.has_input(2) && output_dtype_ != DType::kUndefined && output_dtype_ != yt)
      return invalid_model("output_dtype " + dtype_name(output_dtype_) + " differs from y_zero_point's " + dtype_name(yt));
    if (!dispatch_qtype(yt, [](auto) {}))
      return unsupported("quantizing to " + dtype_name(yt) + " is not supported (int8, uint8, int16, uint16 are)");
    ParamMap pm;
    INGOT_RETURN_IF_ERROR(make_param_map(ctx.input_shape(0), ctx.input_shape(1),
                                         ctx.has_input(2) ? &ctx.input_shape(2) : nullptr, axis_, block_, "y_scale", pm));
    ctx.set_output(0, yt, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const Tensor& S = ctx.input(1);
    const Tensor* Z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& Y = ctx.output(0);
    ParamMap pm;
    INGOT_RETURN_IF_ERROR(make_param_map(X.shape(), S.shape(), Z ? &Z->shape() : nullptr, axis_, block_, "y_scale", pm));
    const auto [scale, zp] = read_scales(S, Z);
    dispatch_qtype(Y.dtype(), [&](auto tag) {
      using Q = typename decltype(tag)::type;
      Q* y = Y.data<Q>();
      const float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
      auto body = [&](auto xtag) {
        using T = typename decltype(xtag)::type;
        const T* x = X.data<T>();
        parallel_for(X.numel(), 4, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            int64_t p = pm(i);
            float v = std::nearbyint(float(x[i]) / scale[size_t(p)]) + float(zp[size_t(p)]);
            if (std::isnan(v)) v = 0;
            y[i] = Q(std::min(hi, std::max(lo, v)));
          }
        });
      };
      if (X.dtype() == DType::kInt32) body(TypeTag<int32_t>{});
      else dispatch_float(X.dtype(), body);
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = 1, block_ = 0;
  bool saturate_ = true;
  DType output_dtype_ = DType::kUndefined;
};

class DequantizeLinearKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", 1);
    block_ = node.attrs.get_int("block_size", 0);
    if (block_ < 0) return invalid_model("block_size=" + std::to_string(block_) + " must be >= 0");
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 or 3 inputs (x, x_scale, x_zero_point), got " + std::to_string(ctx.num_inputs()));
    DType xt = ctx.input_dtype(0), st = ctx.input_dtype(1);
    if (!dispatch_qtype(xt, [](auto) {}) && xt != DType::kInt32)
      return unsupported("input 0 (x) has dtype " + dtype_name(xt) + "; expected int8, uint8, int16, uint16 or int32");
    if (!dtype_is_float(st)) return invalid_model("input 1 (x_scale) has dtype " + dtype_name(st) + ", expected a float type");
    if (ctx.has_input(2) && ctx.input_dtype(2) != xt)
      return invalid_model("input 2 (x_zero_point) has dtype " + dtype_name(ctx.input_dtype(2)) + ", x has " + dtype_name(xt));
    ParamMap pm;
    INGOT_RETURN_IF_ERROR(make_param_map(ctx.input_shape(0), ctx.input_shape(1),
                                         ctx.has_input(2) ? &ctx.input_shape(2) : nullptr, axis_, block_, "x_scale", pm));
    ctx.set_output(0, st, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const Tensor& S = ctx.input(1);
    const Tensor* Z = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& Y = ctx.output(0);
    ParamMap pm;
    INGOT_RETURN_IF_ERROR(make_param_map(X.shape(), S.shape(), Z ? &Z->shape() : nullptr, axis_, block_, "x_scale", pm));
    const auto [scale, zp] = read_scales(S, Z);
    dispatch_float(Y.dtype(), [&](auto ytag) {
      using F = typename decltype(ytag)::type;
      F* y = Y.data<F>();
      auto body = [&](auto xtag) {
        using T = typename decltype(xtag)::type;
        const T* x = X.data<T>();
        parallel_for(X.numel(), 4, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            int64_t p = pm(i);
            y[i] = F(float(int64_t(x[i]) - zp[size_t(p)]) * scale[size_t(p)]);
          }
        });
      };
      if (X.dtype() == DType::kInt32) body(TypeTag<int32_t>{});
      else dispatch_qtype(X.dtype(), body);
    });
    return Status::ok();
  }

 private:
  int64_t axis_ = 1, block_ = 0;
};

class DynamicQuantizeLinearKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0))
      return invalid_model("needs 1 input (x), got " + std::to_string(ctx.num_inputs()));
    if (ctx.input_dtype(0) != DType::kFloat32)
      return unsupported("input 0 (x) has dtype " + dtype_name(ctx.input_dtype(0)) + "; expected float32");
    ctx.set_output(0, DType::kUInt8, ctx.input_shape(0));
    if (ctx.has_output(1)) ctx.set_output(1, DType::kFloat32, {});
    if (ctx.has_output(2)) ctx.set_output(2, DType::kUInt8, {});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const float* x = X.data<float>();
    float mn = 0.f, mx = 0.f;  // the range always includes 0
    for (int64_t i = 0; i < X.numel(); ++i) {
      if (std::isnan(x[i])) continue;
      mn = std::min(mn, x[i]);
      mx = std::max(mx, x[i]);
    }
    float scale = (mx - mn) / 255.f;
    float zpf = scale > 0 ? std::nearbyint(std::min(255.f, std::max(0.f, 0.f - mn / scale))) : 0.f;
    uint8_t zp = uint8_t(zpf);
    uint8_t* y = ctx.output(0).data<uint8_t>();
    parallel_for(X.numel(), 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        float v = scale > 0 ? std::nearbyint(x[i] / scale) + zpf : zpf;
        if (std::isnan(v)) v = zpf;
        y[i] = uint8_t(std::min(255.f, std::max(0.f, v)));
      }
    });
    if (ctx.has_output(1)) ctx.output(1).data<float>()[0] = scale;
    if (ctx.has_output(2)) ctx.output(2).data<uint8_t>()[0] = zp;
    return Status::ok();
  }
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", QuantizeLinear, QuantizeLinearKernel);
INGOT_REGISTER_KERNEL(cpu, "", DequantizeLinear, DequantizeLinearKernel);
INGOT_REGISTER_KERNEL(cpu, "", DynamicQuantizeLinear, DynamicQuantizeLinearKernel);

}  // namespace ingot
