// Unary elementwise ops: math (Sqrt Exp Log Sin ... Round Sign), activations (Relu Sigmoid
// Elu Gelu Mish ...), IsNaN/IsInf, Not, BitwiseNot and Clip. Each op is a functor over its compute type
// (float for float16/bfloat16); UnaryKernel runs it over the input in parallel.
// Lets GCC if-convert and vectorise comparisons/floor in the loops below; ingot never
// inspects floating-point exception flags, so results are unchanged.
#include "backends/cpu/elementwise_util.h"

namespace ingot {
namespace {

using namespace ew;

struct NoAttrs {
  Status parse(const Node&, int) { return Status::ok(); }
};

Status check_finite(const char* name, float v) {
  if (!std::isfinite(v)) return invalid_model(std::string("attribute '") + name + "' must be finite");
  return Status::ok();
}

// Float-only math. Cost is a rough per-element weight for the parallel threshold.
#define EW_FLOAT_OP(Name, Cost, expr)                                \
  struct Name : NoAttrs {                                            \
    static constexpr Types kTypes = Types::kFloat;                   \
    static constexpr int64_t kCost = Cost;                           \
    template <class C> C operator()(C x) const { return (expr); }   \
  };

EW_FLOAT_OP(SqrtOp, 2, std::sqrt(x))
EW_FLOAT_OP(ReciprocalOp, 2, C(1) / x)
EW_FLOAT_OP(LogOp, 8, std::log(x))
EW_FLOAT_OP(ErfOp, 8, std::erf(x))
EW_FLOAT_OP(SinOp, 8, std::sin(x))
EW_FLOAT_OP(CosOp, 8, std::cos(x))
EW_FLOAT_OP(TanOp, 8, std::tan(x))
EW_FLOAT_OP(AsinOp, 8, std::asin(x))
EW_FLOAT_OP(AcosOp, 8, std::acos(x))
EW_FLOAT_OP(AtanOp, 8, std::atan(x))
EW_FLOAT_OP(SinhOp, 8, std::sinh(x))
EW_FLOAT_OP(CoshOp, 8, std::cosh(x))
EW_FLOAT_OP(AsinhOp, 8, std::asinh(x))
EW_FLOAT_OP(AcoshOp, 8, std::acosh(x))
EW_FLOAT_OP(AtanhOp, 8, std::atanh(x))
EW_FLOAT_OP(CeilOp, 1, std::ceil(x))
EW_FLOAT_OP(FloorOp, 1, std::floor(x))
EW_FLOAT_OP(RoundOp, 1, std::nearbyint(x))  // default rounding mode: half to even
EW_FLOAT_OP(SoftsignOp, 2, x / (C(1) + std::fabs(x)))
EW_FLOAT_OP(SoftplusOp, 8, x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
EW_FLOAT_OP(MishOp, 16, x * std::tanh(x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x))))
EW_FLOAT_OP(HardSwishOp, 1, x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5))))
#undef EW_FLOAT_OP

struct ExpOp : NoAttrs {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 4;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return fast_expf(x);
    else return std::exp(x);
  }
};
struct SigmoidOp : NoAttrs {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 4;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return 1.0f / (1.0f + fast_expf(-x));
    else return C(1) / (C(1) + std::exp(-x));
  }
};

struct TanhOp : NoAttrs {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 4;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) return fast_tanhf(x);
    else return std::tanh(x);
  }
};

struct NegOp : NoAttrs {
  static constexpr Types kTypes = Types::kSigned;
  static constexpr int64_t kCost = 1;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(0) - wrap_t<C>(x));
    else return -x;
  }
};
struct AbsOp : NoAttrs {
  static constexpr Types kTypes = Types::kNumeric;
  static constexpr int64_t kCost = 1;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? C(wrap_t<C>(0) - wrap_t<C>(x)) : x;
    else return std::fabs(x);
  }
};
struct SignOp : NoAttrs {
  static constexpr Types kTypes = Types::kNumeric;
  static constexpr int64_t kCost = 1;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x > 0 ? C(1) : C(0);
    else return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);  // keeps NaN and zero
  }
};
struct ReluOp : NoAttrs {
  static constexpr Types kTypes = Types::kSigned;
  static constexpr int64_t kCost = 1;
  template <class C> C operator()(C x) const { return x > C(0) ? x : C(0); }
};
struct NotOp : NoAttrs {
  static constexpr Types kTypes = Types::kBool;
  static constexpr int64_t kCost = 1;
  bool operator()(bool x) const { return !x; }
};
struct BitwiseNotOp : NoAttrs {
  static constexpr Types kTypes = Types::kInt;
  static constexpr int64_t kCost = 1;
  template <class C> C operator()(C x) const { return C(~x); }
};

// Activations with float attributes.
struct LeakyReluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 1;
  float alpha = 0.01f;
  Status parse(const Node& n, int) { alpha = n.attrs.get_float("alpha", 0.01f); return check_finite("alpha", alpha); }
  template <class C> C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
};
struct EluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 8;
  float alpha = 1.f;
  Status parse(const Node& n, int) { alpha = n.attrs.get_float("alpha", 1.f); return check_finite("alpha", alpha); }
  template <class C> C operator()(C x) const { return x < C(0) ? C(alpha) * std::expm1(x) : x; }
};
struct SeluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 8;
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102214813232421875f;
  Status parse(const Node& n, int) {
    alpha = n.attrs.get_float("alpha", alpha);
    gamma = n.attrs.get_float("gamma", gamma);
    INGOT_RETURN_IF_ERROR(check_finite("alpha", alpha));
    return check_finite("gamma", gamma);
  }
  template <class C> C operator()(C x) const {
    return x > C(0) ? C(gamma) * x : C(gamma) * C(alpha) * std::expm1(x);
  }
};
struct CeluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 8;
  float alpha = 1.f;
  Status parse(const Node& n, int) {
    alpha = n.attrs.get_float("alpha", 1.f);
    INGOT_RETURN_IF_ERROR(check_finite("alpha", alpha));
    if (alpha == 0.f) return invalid_model("attribute 'alpha' must not be 0");
    return Status::ok();
  }
  template <class C> C operator()(C x) const {
    return x > C(0) ? x : C(alpha) * std::expm1(x / C(alpha));
  }
};
struct GeluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 16;
  bool tanh_approx = false;
  Status parse(const Node& n, int) {
    std::string a = n.attrs.get_string("approximate", "none");
    if (a != "none" && a != "tanh")
      return invalid_model("attribute 'approximate' = '" + a + "' must be \"none\" or \"tanh\"");
    tanh_approx = a == "tanh";
    return Status::ok();
  }
  template <class C> C operator()(C x) const {
    if (tanh_approx) {
      const C k = C(0.7978845608028654);  // sqrt(2/pi)
      C t = k * (x + C(0.044715) * x * x * x);
      if constexpr (std::is_same_v<C, float>) return 0.5f * x * (1.0f + fast_tanhf(t));
      else return C(0.5) * x * (C(1) + std::tanh(t));
    }
    return C(0.5) * x * std::erfc(-x * C(0.7071067811865476));  // no cancellation for x << 0
  }
};
struct HardSigmoidOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 1;
  float alpha = 0.2f, beta = 0.5f;
  Status parse(const Node& n, int) {
    alpha = n.attrs.get_float("alpha", 0.2f);
    beta = n.attrs.get_float("beta", 0.5f);
    INGOT_RETURN_IF_ERROR(check_finite("alpha", alpha));
    return check_finite("beta", beta);
  }
  template <class C> C operator()(C x) const {
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  }
};
struct ThresholdedReluOp {
  static constexpr Types kTypes = Types::kFloat;
  static constexpr int64_t kCost = 1;
  float alpha = 1.f;
  Status parse(const Node& n, int) { alpha = n.attrs.get_float("alpha", 1.f); return Status::ok(); }
  template <class C> C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};
struct ShrinkOp {
  static constexpr Types kTypes = Types::kNumeric;
  static constexpr int64_t kCost = 1;
  float lambd = 0.5f, bias = 0.f;
  Status parse(const Node& n, int) {
    lambd = n.attrs.get_float("lambd", 0.5f);
    bias = n.attrs.get_float("bias", 0.f);
    INGOT_RETURN_IF_ERROR(check_finite("lambd", lambd));
    return check_finite("bias", bias);
  }
  template <class C> C operator()(C x) const { return scalar::shrink(x, lambd, bias); }
};

// ---------------------------------------------------------------------------------------
template <class Op>
class UnaryKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override { return op_.parse(node, opset); }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("missing required input 0 (X)");
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "X", Op::kTypes));
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    bool ok = dispatch_set<Op::kTypes>(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_compute<T, T>(x, y, op_, Op::kCost);
    });
    if (!ok) return dtype_error(0, "X", x.dtype(), Op::kTypes);
    return Status::ok();
  }
  // y[i] = op(x[i]) reads each element before writing it: safe in place.
  int output_may_overwrite_input(int output) const override { return output == 0 ? 0 : -1; }

 private:
  Op op_;
};

// IsNaN / IsInf: float in, bool out.
template <bool kIsInf>
class FloatTestKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    pos_ = node.attrs.get_int("detect_positive", 1) != 0;
    neg_ = node.attrs.get_int("detect_negative", 1) != 0;
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("missing required input 0 (X)");
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "X", Types::kFloat));
    ctx.set_output(0, DType::kBool, ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const bool pos = pos_, neg = neg_;
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsInf) {
        unary_compute<T, bool>(x, y, [pos, neg](auto v) {
          return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
        });
      } else {
        unary_compute<T, bool>(x, y, [](auto v) { return v != v; });
      }
    });
    return Status::ok();
  }

 private:
  bool pos_ = true, neg_ = true;
};

// ---------------------------------------------------------------------------------------
// Clip: min/max attributes before opset 11, optional scalar inputs from 11 on.
class ClipKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    attrs_ = opset < 11;
    if (attrs_) {
      min_ = node.attrs.get_float("min", -std::numeric_limits<float>::infinity());
      max_ = node.attrs.get_float("max", std::numeric_limits<float>::infinity());
      if (std::isnan(min_) || std::isnan(max_)) return invalid_model("attributes 'min' and 'max' must not be NaN");
    }
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("missing required input 0 (input)");
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "input", attrs_ ? Types::kFloat : Types::kNumeric));
    static const char* const names[] = {"input", "min", "max"};
    for (int i = 1; i <= 2 && !attrs_; ++i) {
      if (!ctx.has_input(i)) continue;
      INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, i, names[i], 0, "input"));
      if (shape_numel(ctx.input_shape(i)) != 1)
        return invalid_argument(input_label(i, names[i]) + " must be a scalar, got shape " +
                                shape_str(ctx.input_shape(i)));
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
      if constexpr (std::is_floating_point_v<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      }
      if (attrs_) {
        if constexpr (std::is_floating_point_v<C>) {
          lo = C(min_);
          hi = C(max_);
        }
      } else {
        if (ctx.has_input(1)) lo = C(ctx.input(1).data<T>()[0]);
        if (ctx.has_input(2)) hi = C(ctx.input(2).data<T>()[0]);
      }
      unary_compute<T, T>(x, y, [lo, hi](C v) { return std::min(std::max(v, lo), hi); });
    });
    return Status::ok();
  }

 private:
  bool attrs_ = false;
  float min_ = 0, max_ = 0;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Sqrt, UnaryKernel<SqrtOp>);
INGOT_REGISTER_KERNEL(cpu, "", Reciprocal, UnaryKernel<ReciprocalOp>);
INGOT_REGISTER_KERNEL(cpu, "", Exp, UnaryKernel<ExpOp>);
INGOT_REGISTER_KERNEL(cpu, "", Log, UnaryKernel<LogOp>);
INGOT_REGISTER_KERNEL(cpu, "", Erf, UnaryKernel<ErfOp>);
INGOT_REGISTER_KERNEL(cpu, "", Tanh, UnaryKernel<TanhOp>);
INGOT_REGISTER_KERNEL(cpu, "", Sigmoid, UnaryKernel<SigmoidOp>);
INGOT_REGISTER_KERNEL(cpu, "", Sin, UnaryKernel<SinOp>);
INGOT_REGISTER_KERNEL(cpu, "", Cos, UnaryKernel<CosOp>);
INGOT_REGISTER_KERNEL(cpu, "", Tan, UnaryKernel<TanOp>);
INGOT_REGISTER_KERNEL(cpu, "", Asin, UnaryKernel<AsinOp>);
INGOT_REGISTER_KERNEL(cpu, "", Acos, UnaryKernel<AcosOp>);
INGOT_REGISTER_KERNEL(cpu, "", Atan, UnaryKernel<AtanOp>);
INGOT_REGISTER_KERNEL(cpu, "", Sinh, UnaryKernel<SinhOp>);
INGOT_REGISTER_KERNEL(cpu, "", Cosh, UnaryKernel<CoshOp>);
INGOT_REGISTER_KERNEL(cpu, "", Asinh, UnaryKernel<AsinhOp>);
INGOT_REGISTER_KERNEL(cpu, "", Acosh, UnaryKernel<AcoshOp>);
INGOT_REGISTER_KERNEL(cpu, "", Atanh, UnaryKernel<AtanhOp>);
INGOT_REGISTER_KERNEL(cpu, "", Ceil, UnaryKernel<CeilOp>);
INGOT_REGISTER_KERNEL(cpu, "", Floor, UnaryKernel<FloorOp>);
INGOT_REGISTER_KERNEL(cpu, "", Round, UnaryKernel<RoundOp>);
INGOT_REGISTER_KERNEL(cpu, "", Softsign, UnaryKernel<SoftsignOp>);
INGOT_REGISTER_KERNEL(cpu, "", Softplus, UnaryKernel<SoftplusOp>);
INGOT_REGISTER_KERNEL(cpu, "", Mish, UnaryKernel<MishOp>);
INGOT_REGISTER_KERNEL(cpu, "", HardSwish, UnaryKernel<HardSwishOp>);
INGOT_REGISTER_KERNEL(cpu, "", Neg, UnaryKernel<NegOp>);
INGOT_REGISTER_KERNEL(cpu, "", Abs, UnaryKernel<AbsOp>);
INGOT_REGISTER_KERNEL(cpu, "", Sign, UnaryKernel<SignOp>);
INGOT_REGISTER_KERNEL(cpu, "", Relu, UnaryKernel<ReluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Not, UnaryKernel<NotOp>);
INGOT_REGISTER_KERNEL(cpu, "", BitwiseNot, UnaryKernel<BitwiseNotOp>);
INGOT_REGISTER_KERNEL(cpu, "", LeakyRelu, UnaryKernel<LeakyReluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Elu, UnaryKernel<EluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Selu, UnaryKernel<SeluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Celu, UnaryKernel<CeluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Gelu, UnaryKernel<GeluOp>);
INGOT_REGISTER_KERNEL(cpu, "", HardSigmoid, UnaryKernel<HardSigmoidOp>);
INGOT_REGISTER_KERNEL(cpu, "", ThresholdedRelu, UnaryKernel<ThresholdedReluOp>);
INGOT_REGISTER_KERNEL(cpu, "", Shrink, UnaryKernel<ShrinkOp>);
INGOT_REGISTER_KERNEL(cpu, "", IsNaN, FloatTestKernel<false>);
INGOT_REGISTER_KERNEL(cpu, "", IsInf, FloatTestKernel<true>);
INGOT_REGISTER_KERNEL(cpu, "", Clip, ClipKernel);

}  // namespace ingot
