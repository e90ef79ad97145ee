// Binary elementwise ops with numpy broadcasting: arithmetic (Add Sub Mul Div Mod Pow),
// BitShift, BitwiseAnd/Or/Xor, comparisons, logical And/Or/Xor, Where and PRelu.
// Lets GCC if-convert and vectorise comparisons/floor in the loops below; ingot never
// inspects floating-point exception flags, so results are unchanged.
#include "backends/cpu/elementwise_util.h"

namespace ingot {
namespace {

using namespace ew;

// ---------------------------------------------------------------------------------------
// Functors. C is the compute type (float for float16/bfloat16).

struct NoAttrs {
  Status parse(const Node&, int) { return Status::ok(); }
};

struct AddOp : NoAttrs {
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) + wrap_t<C>(b));
    else return a + b;
  }
};
struct SubOp : NoAttrs {
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) - wrap_t<C>(b));
    else return a - b;
  }
};
struct MulOp : NoAttrs {
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) * wrap_t<C>(b));
    else return a * b;
  }
};
// Integer division truncates toward zero; division by zero gives 0 and MIN / -1 wraps.
struct DivOp : NoAttrs {
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(wrap_t<C>(0) - wrap_t<C>(a));
      }
      return C(a / b);
    } else {
      return a / b;
    }
  }
};

// fmod=1: the remainder takes the dividend's sign (C fmod / %); fmod=0: the divisor's
// (Python / numpy mod). Integer mod by zero gives 0.
struct ModOp {
  bool fmod = false;
  Status parse(const Node& node, int) {
    int64_t f = node.attrs.get_int("fmod", 0);
    if (f != 0 && f != 1) return invalid_model("attribute 'fmod' = " + std::to_string(f) + " must be 0 or 1");
    fmod = f == 1;
    return Status::ok();
  }
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
        C r = C(a % b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
        return r;
      } else {
        return C(a % b);
      }
    } else {
      C r = std::fmod(a, b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};

struct BitShiftOp {
  bool left = true;
  Status parse(const Node& node, int) {
    if (!node.attrs.has("direction")) return invalid_model("attribute 'direction' is required");
    std::string d = node.attrs.get_string("direction", "");
    if (d != "LEFT" && d != "RIGHT")
      return invalid_model("attribute 'direction' = '" + d + "' must be \"LEFT\" or \"RIGHT\"");
    left = d == "LEFT";
    return Status::ok();
  }
  template <class C> C operator()(C a, C b) const {
    if (b >= C(sizeof(C) * 8)) return C(0);
    return left ? C(a << b) : C(a >> b);
  }
};

struct EqualOp : NoAttrs { template <class C> bool operator()(C a, C b) const { return a == b; } };
struct LessOp : NoAttrs { template <class C> bool operator()(C a, C b) const { return a < b; } };
struct GreaterOp : NoAttrs { template <class C> bool operator()(C a, C b) const { return a > b; } };
struct LessEqOp : NoAttrs { template <class C> bool operator()(C a, C b) const { return a <= b; } };
struct GreaterEqOp : NoAttrs { template <class C> bool operator()(C a, C b) const { return a >= b; } };
struct AndOp : NoAttrs { bool operator()(bool a, bool b) const { return a && b; } };
struct OrOp : NoAttrs { bool operator()(bool a, bool b) const { return a || b; } };
struct XorOp : NoAttrs { bool operator()(bool a, bool b) const { return a != b; } };
// Opset 18's bitwise ops on integers (C(...): the operands of narrow types promote to int).
struct BitwiseAndOp : NoAttrs { template <class C> C operator()(C a, C b) const { return C(a & b); } };
struct BitwiseOrOp : NoAttrs { template <class C> C operator()(C a, C b) const { return C(a | b); } };
struct BitwiseXorOp : NoAttrs { template <class C> C operator()(C a, C b) const { return C(a ^ b); } };

struct PReluOp {
  template <class C> C operator()(C x, C s) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (std::is_integral_v<C>) {
      return x < 0 ? C(wrap_t<C>(x) * wrap_t<C>(s)) : x;
    } else {
      return x < 0 ? x * s : x;
    }
  }
};

const char* const kAB[] = {"A", "B"};

Status infer_broadcast(InferContext& ctx, DType out, const std::vector<Shape>& shapes) {
  INGOT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(shapes));
  ctx.set_output(0, out, std::move(s));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------
// Same-dtype binary op; the output is bool (comparisons) or the input dtype.
template <class Op, Types S, bool BoolOut, int64_t Cost = 1>
class BinaryKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override { return op_.parse(node, opset); }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(require_inputs(ctx, 2, kAB));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "A", S));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 1, "B", 0, "A"));
    return infer_broadcast(ctx, BoolOut ? DType::kBool : ctx.input_dtype(0),
                           {ctx.input_shape(0), ctx.input_shape(1)});
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    bool ok = dispatch_set<S>(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using TO = std::conditional_t<BoolOut, bool, T>;
      binary_compute<T, T, TO>(a, b, out, op_, Cost);
    });
    if (!ok) return dtype_error(0, "A", a.dtype(), S);
    return Status::ok();
  }

 private:
  Op op_;
};

using AddKernel = BinaryKernel<AddOp, Types::kNumeric, false>;
using SubKernel = BinaryKernel<SubOp, Types::kNumeric, false>;
using MulKernel = BinaryKernel<MulOp, Types::kNumeric, false>;
using DivKernel = BinaryKernel<DivOp, Types::kNumeric, false, 4>;
using ModKernel = BinaryKernel<ModOp, Types::kNumeric, false, 8>;
using BitShiftKernel = BinaryKernel<BitShiftOp, Types::kUnsigned, false>;
using EqualKernel = BinaryKernel<EqualOp, Types::kAll, true>;
using LessKernel = BinaryKernel<LessOp, Types::kNumeric, true>;
using GreaterKernel = BinaryKernel<GreaterOp, Types::kNumeric, true>;
using LessEqKernel = BinaryKernel<LessEqOp, Types::kNumeric, true>;
using GreaterEqKernel = BinaryKernel<GreaterEqOp, Types::kNumeric, true>;
using AndKernel = BinaryKernel<AndOp, Types::kBool, true>;
using OrKernel = BinaryKernel<OrOp, Types::kBool, true>;
using XorKernel = BinaryKernel<XorOp, Types::kBool, true>;
using BitwiseAndKernel = BinaryKernel<BitwiseAndOp, Types::kInt, false>;
using BitwiseOrKernel = BinaryKernel<BitwiseOrOp, Types::kInt, false>;
using BitwiseXorKernel = BinaryKernel<BitwiseXorOp, Types::kInt, false>;

// ---------------------------------------------------------------------------------------
// Pow: base and exponent dtypes may differ (opset 12+); the output has the base's dtype.

struct PowOp {
  template <class C, class E> C operator()(C a, E b) const {
    if constexpr (std::is_integral_v<C> && std::is_integral_v<E>) return scalar::int_pow(a, int64_t(b));
    else if constexpr (std::is_integral_v<C>) return float_to_int<C>(std::pow(double(a), double(b)));
    else if constexpr (std::is_same_v<C, E>) return std::pow(a, b);
    else return C(std::pow(double(a), double(b)));
  }
};
struct SquareOp {
  template <class C> C operator()(C a) const { return a * a; }
};

class PowKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(require_inputs(ctx, 2, kAB));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "X", Types::kNumeric));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 1, "Y", Types::kNumeric));
    return infer_broadcast(ctx, ctx.input_dtype(0), {ctx.input_shape(0), ctx.input_shape(1)});
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    DType ta = a.dtype(), tb = b.dtype();
    // x ** 2 (variance in decomposed norms): a multiply.
    if (dtype_is_float(ta) && b.numel() == 1 && b.scalar_as_double() == 2.0 && out.shape() == a.shape()) {
      dispatch_float(ta, [&](auto tag) {
        using T = typename decltype(tag)::type;
        unary_compute<T, T>(a, out, SquareOp{});
      });
      return Status::ok();
    }
    if (ta == tb && dtype_is_float(ta)) {
      dispatch_float(ta, [&](auto tag) {
        using T = typename decltype(tag)::type;
        binary_compute<T, T, T>(a, b, out, PowOp{}, 16);
      });
      return Status::ok();
    }
    // Mixed or integer: exponent as int64 when both are integers, else as double.
    bool int_exp = dtype_is_integer(ta) && dtype_is_integer(tb);
    Tensor e(int_exp ? DType::kInt64 : DType::kFloat64, b.shape());
    dispatch_numeric(tb, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = b.data<T>();
      for (int64_t i = 0; i < b.numel(); ++i) {
        if (int_exp) e.data<int64_t>()[i] = convert<int64_t>(src[i]);
        else e.data<double>()[i] = convert<double>(src[i]);
      }
    });
    dispatch_numeric(ta, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (int_exp) {
        if constexpr (std::is_integral_v<T>) binary_compute<T, int64_t, T>(a, e, out, PowOp{}, 8);
      } else {
        binary_compute<T, double, T>(a, e, out, PowOp{}, 16);
      }
    });
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------
// Where(condition, X, Y): three-way broadcast; moves elements by size.
class WhereKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    static const char* const names[] = {"condition", "X", "Y"};
    INGOT_RETURN_IF_ERROR(require_inputs(ctx, 3, names));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "condition", Types::kBool));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 1, "X", Types::kAll));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 2, "Y", 1, "X"));
    return infer_broadcast(ctx, ctx.input_dtype(1), {ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)});
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    Tensor& out = ctx.output(0);
    auto plan = make_plan<3>({&c.shape(), &x.shape(), &y.shape()}, out.shape());
    dispatch_by_size(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool* pc = c.data<bool>();
      const T* px = static_cast<const T*>(x.raw());
      const T* py = static_cast<const T*>(y.raw());
      T* po = static_cast<T*>(out.raw());
      walk<3>(plan, 1, [&](int64_t o, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& st, int64_t n) {
        const bool* cc = pc + off[0];
        const T* xx = px + off[1];
        const T* yy = py + off[2];
        T* z = po + o;
        if (st[0] && st[1] && st[2]) {
          for (int64_t i = 0; i < n; ++i) z[i] = cc[i] ? xx[i] : yy[i];
        } else if (!st[0]) {
          const T* src = *cc ? xx : yy;
          int64_t s = *cc ? st[1] : st[2];
          if (s) std::memcpy(z, src, size_t(n) * sizeof(T));
          else for (int64_t i = 0; i < n; ++i) z[i] = *src;
        } else {
          for (int64_t i = 0; i < n; ++i) z[i] = cc[i] ? xx[i * st[1]] : yy[i * st[2]];
        }
      });
    });
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------
// PRelu: slope broadcasts to X's shape (unidirectionally).
class PReluKernel : public OpKernel {
 public:
  Status init(const Node&, int opset) override {
    channel_slope_ = opset < 7;
    return Status::ok();
  }
  // Before opset 7 a 1-D slope of size C applies along X's channel axis (axis 1).
  Shape slope_shape(const Shape& x, const Shape& slope) const {
    if (!channel_slope_ || slope.size() != 1 || x.size() < 2 || slope[0] != x[1]) return slope;
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }
  Status infer(InferContext& ctx) const override {
    static const char* const names[] = {"X", "slope"};
    INGOT_RETURN_IF_ERROR(require_inputs(ctx, 2, names));
    INGOT_RETURN_IF_ERROR(check_dtype(ctx, 0, "X", Types::kNumeric));
    INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 1, "slope", 0, "X"));
    auto s = broadcast_shapes({ctx.input_shape(0), slope_shape(ctx.input_shape(0), ctx.input_shape(1))});
    if (!s || *s != ctx.input_shape(0)) {
      return invalid_argument("input 1 (slope) of shape " + shape_str(ctx.input_shape(1)) +
                              " does not broadcast to input 0 (X) of shape " + shape_str(ctx.input_shape(0)));
    }
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& s = ctx.input(1);
    Tensor& out = ctx.output(0);
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_compute<T, T, T>(x, s.reshaped(slope_shape(x.shape(), s.shape())), out, PReluOp{});
    });
    return Status::ok();
  }

 private:
  bool channel_slope_ = false;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Add, AddKernel);
INGOT_REGISTER_KERNEL(cpu, "", Sub, SubKernel);
INGOT_REGISTER_KERNEL(cpu, "", Mul, MulKernel);
INGOT_REGISTER_KERNEL(cpu, "", Div, DivKernel);
INGOT_REGISTER_KERNEL(cpu, "", Mod, ModKernel);
INGOT_REGISTER_KERNEL(cpu, "", Pow, PowKernel);
INGOT_REGISTER_KERNEL(cpu, "", BitShift, BitShiftKernel);
INGOT_REGISTER_KERNEL(cpu, "", BitwiseAnd, BitwiseAndKernel);
INGOT_REGISTER_KERNEL(cpu, "", BitwiseOr, BitwiseOrKernel);
INGOT_REGISTER_KERNEL(cpu, "", BitwiseXor, BitwiseXorKernel);
INGOT_REGISTER_KERNEL(cpu, "", Equal, EqualKernel);
INGOT_REGISTER_KERNEL(cpu, "", Less, LessKernel);
INGOT_REGISTER_KERNEL(cpu, "", Greater, GreaterKernel);
INGOT_REGISTER_KERNEL(cpu, "", LessOrEqual, LessEqKernel);
INGOT_REGISTER_KERNEL(cpu, "", GreaterOrEqual, GreaterEqKernel);
INGOT_REGISTER_KERNEL(cpu, "", And, AndKernel);
INGOT_REGISTER_KERNEL(cpu, "", Or, OrKernel);
INGOT_REGISTER_KERNEL(cpu, "", Xor, XorKernel);
INGOT_REGISTER_KERNEL(cpu, "", Where, WhereKernel);
INGOT_REGISTER_KERNEL(cpu, "", PRelu, PReluKernel);

}  // namespace ingot
