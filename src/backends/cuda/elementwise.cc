// CUDA kernels of the elementwise ops: binary arithmetic, comparisons and logic with numpy
// broadcasting, Where, PRelu, variadic Max/Min/Sum/Mean, unary math and activations, Clip,
// Cast and CastLike. They compute exactly what the CPU kernels compute (same dtype sets,
// same integer rules); the device code is in elementwise_*.cu.
// compute() only merges dims into a fixed-size Broadcast and launches: these ops run on
// small tensors (attention masks) where host time per launch matters.
#include <cstring>
#include <limits>

#include "backends/cuda/broadcast_geometry.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/elementwise_impl.h"
#include "ir/dispatch.h"

namespace ingot::cuda {

namespace ew {

bool make_broadcast(const Shape* const* ins, int n, const Shape& out, Broadcast& b) {
  b = Broadcast{};
  return merge_broadcast(ins, n, out, b.rank, b.numel, b.dims, b.strides);
}

}  // namespace ew

namespace {

using ew::BinaryOp;
using ew::Broadcast;
using ew::UnaryOp;

// The CPU kernels' dtype sets (elementwise_util.h).
enum class Dtypes { kFloat, kSigned, kNumeric, kUnsigned, kBool, kAll };

bool in_dtypes(DType t, Dtypes s) {
  switch (s) {
    case Dtypes::kFloat: return dtype_is_float(t);
    case Dtypes::kSigned: return dtype_is_float(t) || (dtype_is_integer(t) && dtype_is_signed(t));
    case Dtypes::kNumeric: return dtype_is_float(t) || dtype_is_integer(t);
    case Dtypes::kUnsigned: return dtype_is_integer(t) && !dtype_is_signed(t);
    case Dtypes::kBool: return t == DType::kBool;
    case Dtypes::kAll: return dtype_is_supported(t);
  }
  return false;
}

std::string dtype_reason(DType t) { return "dtype " + dtype_name(t); }

// Why a broadcast of these input shapes cannot run here ("" when it can).
std::string broadcast_reason(const std::vector<const Shape*>& ins, const Shape& out) {
  Broadcast b;
  if (!ew::make_broadcast(ins.data(), int(ins.size()), out, b))
    return "broadcast of more than " + std::to_string(ew::kMaxRank) + " dims after merging";
  return {};
}

Status broadcast_into(std::initializer_list<const Shape*> ins, const Shape& out, Broadcast& b) {
  if (!ew::make_broadcast(ins.begin(), int(ins.size()), out, b))
    return internal_error("broadcast of more than " + std::to_string(ew::kMaxRank) + " dims after merging");
  return Status::ok();
}

// ---------------------------------------------------------------------------------------
// Same-dtype binary ops: arithmetic, comparisons, logic, BitShift.
template <BinaryOp kOp, Dtypes S>
class BinaryKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    op_ = kOp;
    if constexpr (kOp == BinaryOp::kMod) {
      int64_t f = node.attrs.get_int("fmod", 0);
      if (f != 0 && f != 1) return invalid_model("attribute 'fmod' = " + std::to_string(f) + " must be 0 or 1");
      if (f == 1) op_ = BinaryOp::kFMod;
    }
    if constexpr (kOp == BinaryOp::kShiftLeft) {
      if (!node.attrs.has("direction")) return invalid_model("attribute 'direction' is required");
      std::string d = node.attrs.get_string("direction", "");
      if (d != "LEFT" && d != "RIGHT")
        return invalid_model("attribute 'direction' = '" + d + "' must be \"LEFT\" or \"RIGHT\"");
      if (d == "RIGHT") op_ = BinaryOp::kShiftRight;
    }
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.size() != 2 || !in[0].present || !in[1].present) return "needs inputs A and B";
    if (!in_dtypes(in[0].dtype, S) || in[1].dtype != in[0].dtype) return dtype_reason(in[0].dtype);
    return broadcast_reason({&in[0].shape, &in[1].shape}, out[0].shape);
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    Broadcast g;
    INGOT_RETURN_IF_ERROR(broadcast_into({&a.shape(), &b.shape()}, out.shape(), g));
    return cuda_status(ew::launch_binary(op_, a.dtype(), b.dtype(), a.raw(), b.raw(), out.raw(), g, ctx.stream()),
                    "elementwise binary");
  }

 private:
  BinaryOp op_ = kOp;
};

// ---------------------------------------------------------------------------------------
// Pow: base and exponent dtypes may differ. A different exponent dtype is first converted in
// the workspace to int64 (both integers) or float64, the forms the CPU kernel computes with.
class PowKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.size() != 2 || !in[0].present || !in[1].present) return "needs inputs X and Y";
    if (!in_dtypes(in[0].dtype, Dtypes::kNumeric)) return dtype_reason(in[0].dtype);
    if (!in_dtypes(in[1].dtype, Dtypes::kNumeric)) return dtype_reason(in[1].dtype);
    return broadcast_reason({&in[0].shape, &in[1].shape}, out[0].shape);
  }
  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != 2 || exponent_dtype(in[0].dtype, in[1].dtype) == in[1].dtype) return 0;
    return size_t(shape_numel(in[1].shape)) * sizeof(int64_t);
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    Broadcast g;
    INGOT_RETURN_IF_ERROR(broadcast_into({&a.shape(), &b.shape()}, out.shape(), g));
    const DType te = exponent_dtype(a.dtype(), b.dtype());
    const void* exponent = b.raw();
    if (te != b.dtype()) {
      if (ctx.workspace_bytes() < size_t(b.numel()) * sizeof(int64_t))
        return internal_error("Pow: workspace smaller than the converted exponent");
      INGOT_RETURN_IF_ERROR(cuda_status(
          ew::launch_cast(b.dtype(), te, b.raw(), ctx.workspace(), b.numel(), ctx.stream()), "Pow exponent cast"));
      exponent = ctx.workspace();
    }
    return cuda_status(ew::launch_binary(BinaryOp::kPow, a.dtype(), te, a.raw(), exponent, out.raw(), g, ctx.stream()),
                    "Pow");
  }

 private:
  // The exponent's dtype in the kernel: its own when it matches the base, else int64 for
  // integer ** integer and float64 otherwise.
  static DType exponent_dtype(DType base, DType exp) {
    if (base == exp) return exp;
    return dtype_is_integer(base) && dtype_is_integer(exp) ? DType::kInt64 : DType::kFloat64;
  }
};

// ---------------------------------------------------------------------------------------
class WhereKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.size() != 3 || !in[0].present || !in[1].present || !in[2].present) return "needs 3 inputs";
    if (in[0].dtype != DType::kBool) return "condition " + dtype_reason(in[0].dtype);
    if (!in_dtypes(in[1].dtype, Dtypes::kAll) || in[2].dtype != in[1].dtype) return dtype_reason(in[1].dtype);
    return broadcast_reason({&in[0].shape, &in[1].shape, &in[2].shape}, out[0].shape);
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    Tensor& out = ctx.output(0);
    Broadcast g;
    INGOT_RETURN_IF_ERROR(broadcast_into({&c.shape(), &x.shape(), &y.shape()}, out.shape(), g));
    return cuda_status(ew::launch_where(dtype_size(x.dtype()), static_cast<const bool*>(c.raw()), x.raw(), y.raw(),
                                     out.raw(), g, ctx.stream()),
                    "Where");
  }
};

// ---------------------------------------------------------------------------------------
// PRelu: slope broadcasts to X; before opset 7 a 1-D slope of size C applies along axis 1.
class PReluKernel : public CudaKernel {
 public:
  Status init(const Node&, int opset) override {
    channel_slope_ = opset < 7;
    return Status::ok();
  }
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.size() != 2 || !in[0].present || !in[1].present) return "needs inputs X and slope";
    if (!in_dtypes(in[0].dtype, Dtypes::kNumeric) || in[1].dtype != in[0].dtype) return dtype_reason(in[0].dtype);
    Shape slope = slope_shape(in[0].shape, in[1].shape);
    return broadcast_reason({&in[0].shape, &slope}, out[0].shape);
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& s = ctx.input(1);
    Tensor& out = ctx.output(0);
    Broadcast g;
    if (channel_slope_) {
      Shape slope = slope_shape(x.shape(), s.shape());  // old opsets only: allocates
      INGOT_RETURN_IF_ERROR(broadcast_into({&x.shape(), &slope}, out.shape(), g));
    } else {
      INGOT_RETURN_IF_ERROR(broadcast_into({&x.shape(), &s.shape()}, out.shape(), g));
    }
    return cuda_status(ew::launch_binary(BinaryOp::kPRelu, x.dtype(), s.dtype(), x.raw(), s.raw(), out.raw(), g,
                                      ctx.stream()),
                    "PRelu");
  }

 private:
  Shape slope_shape(const Shape& x, const Shape& slope) const {
    if (!channel_slope_ || slope.size() != 1 || x.size() < 2 || slope[0] != x[1]) return slope;
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }

  bool channel_slope_ = false;
};

// ---------------------------------------------------------------------------------------
// Max, Min, Sum, Mean over N >= 1 inputs: the first pair into the output, then each further
// input folded into it in place, as the CPU kernel does (so half types round the same way
// after each step); Mean divides at the end.
template <BinaryOp kOp, Dtypes S, bool kMean>
class VariadicKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.empty()) return "needs at least 1 input";
    for (const InputMeta& m : in) {
      if (!m.present) return "missing input";
      if (!in_dtypes(m.dtype, S) || m.dtype != in[0].dtype) return dtype_reason(m.dtype);
    }
    if (in.size() == 1) return {};
    std::string r = broadcast_reason({&in[0].shape, &in[1].shape}, out[0].shape);
    for (size_t i = 2; i < in.size() && r.empty(); ++i)
      r = broadcast_reason({&out[0].shape, &in[i].shape}, out[0].shape);
    return r;
  }
  Status compute(CudaComputeContext& ctx) const override {
    const int n = ctx.num_inputs();
    Tensor& out = ctx.output(0);
    const Tensor& first = ctx.input(0);
    if (n == 1) {
      return cuda_status(
          cudaMemcpyAsync(out.raw(), first.raw(), first.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream()),
          "variadic copy");
    }
    const DType t = out.dtype();
    Broadcast g;
    INGOT_RETURN_IF_ERROR(broadcast_into({&first.shape(), &ctx.input(1).shape()}, out.shape(), g));
    INGOT_RETURN_IF_ERROR(cuda_status(
        ew::launch_binary(kOp, t, t, first.raw(), ctx.input(1).raw(), out.raw(), g, ctx.stream()), "variadic"));
    for (int i = 2; i < n; ++i) {
      const Tensor& in = ctx.input(i);
      INGOT_RETURN_IF_ERROR(broadcast_into({&out.shape(), &in.shape()}, out.shape(), g));
      INGOT_RETURN_IF_ERROR(
          cuda_status(ew::launch_binary(kOp, t, t, out.raw(), in.raw(), out.raw(), g, ctx.stream()), "variadic"));
    }
    if constexpr (kMean) {
      ew::UnaryParams p;
      p.a = double(n);
      INGOT_RETURN_IF_ERROR(cuda_status(
          ew::launch_unary(UnaryOp::kDivideBy, t, p, out.raw(), out.raw(), out.numel(), ctx.stream()), "Mean"));
    }
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------
// Unary ops; attributes as the CPU kernel parses them.
Status finite_attr(const Node& node, const char* name, float def, double& out) {
  float v = node.attrs.get_float(name, def);
  if (!std::isfinite(v)) return invalid_model(std::string("attribute '") + name + "' must be finite");
  out = double(v);
  return Status::ok();
}

template <UnaryOp kOp, Dtypes S>
class UnaryKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    op_ = kOp;
    switch (kOp) {
      case UnaryOp::kLeakyRelu: return finite_attr(node, "alpha", 0.01f, p_.a);
      case UnaryOp::kElu: return finite_attr(node, "alpha", 1.f, p_.a);
      case UnaryOp::kSelu:
        INGOT_RETURN_IF_ERROR(finite_attr(node, "alpha", 1.67326319217681884765625f, p_.a));
        return finite_attr(node, "gamma", 1.05070102214813232421875f, p_.b);
      case UnaryOp::kCelu:
        INGOT_RETURN_IF_ERROR(finite_attr(node, "alpha", 1.f, p_.a));
        if (p_.a == 0) return invalid_model("attribute 'alpha' must not be 0");
        return Status::ok();
      case UnaryOp::kHardSigmoid:
        INGOT_RETURN_IF_ERROR(finite_attr(node, "alpha", 0.2f, p_.a));
        return finite_attr(node, "beta", 0.5f, p_.b);
      case UnaryOp::kThresholdedRelu: p_.a = double(node.attrs.get_float("alpha", 1.f)); return Status::ok();
      case UnaryOp::kShrink:
        INGOT_RETURN_IF_ERROR(finite_attr(node, "lambd", 0.5f, p_.a));
        return finite_attr(node, "bias", 0.f, p_.b);
      case UnaryOp::kGeluErf: {
        std::string a = node.attrs.get_string("approximate", "none");
        if (a != "none" && a != "tanh")
          return invalid_model("attribute 'approximate' = '" + a + "' must be \"none\" or \"tanh\"");
        if (a == "tanh") op_ = UnaryOp::kGeluTanh;
        return Status::ok();
      }
      case UnaryOp::kIsInf:
        p_.a = node.attrs.get_int("detect_positive", 1) != 0 ? 1 : 0;
        p_.b = node.attrs.get_int("detect_negative", 1) != 0 ? 1 : 0;
        return Status::ok();
      default: return Status::ok();
    }
  }
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.empty() || !in[0].present) return "needs input X";
    if (!in_dtypes(in[0].dtype, S)) return dtype_reason(in[0].dtype);
    return {};
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    return cuda_status(ew::launch_unary(op_, x.dtype(), p_, x.raw(), ctx.output(0).raw(), x.numel(), ctx.stream()),
                    "elementwise unary");
  }

 private:
  UnaryOp op_ = kOp;
  ew::UnaryParams p_;
};

// ---------------------------------------------------------------------------------------
// Clip: min/max attributes before opset 11, optional scalar inputs from 11 on. Bounds known
// at plan time are passed by value; others are read on the device.
template <class T>
using clip_compute_t = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

template <class C>
uint64_t bits_of(C v) {
  static_assert(sizeof(C) <= sizeof(uint64_t));
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(C));
  return r;
}

class ClipKernel : public CudaKernel {
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
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.empty() || !in[0].present) return "needs input";
    if (!in_dtypes(in[0].dtype, attrs_ ? Dtypes::kFloat : Dtypes::kNumeric)) return dtype_reason(in[0].dtype);
    return {};
  }
  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ew::ClipBounds b;
    bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = clip_compute_t<T>;
      C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
      if constexpr (std::is_floating_point_v<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
        if (attrs_) {
          lo = C(min_);
          hi = C(max_);
        }
      }
      if (!attrs_) {
        for (int i = 1; i <= 2; ++i) {
          if (!ctx.has_input(i)) continue;
          C& v = i == 1 ? lo : hi;
          if (const Tensor* h = ctx.host_value(i)) v = C(h->data<T>()[0]);
          else (i == 1 ? b.lo : b.hi) = ctx.input(i).raw();
        }
      }
      b.lo_bits = bits_of(lo);
      b.hi_bits = bits_of(hi);
    });
    if (!ok) return internal_error("Clip: dtype " + dtype_name(x.dtype()));
    return cuda_status(ew::launch_clip(x.dtype(), b, x.raw(), ctx.output(0).raw(), x.numel(), ctx.stream()), "Clip");
  }

 private:
  bool attrs_ = false;
  float min_ = 0, max_ = 0;
};

// ---------------------------------------------------------------------------------------
Status cast_into(const Tensor& in, Tensor& out, cudaStream_t stream) {
  if (in.dtype() == out.dtype())
    return cuda_status(cudaMemcpyAsync(out.raw(), in.raw(), in.nbytes(), cudaMemcpyDeviceToDevice, stream),
                       "Cast copy");
  return cuda_status(ew::launch_cast(in.dtype(), out.dtype(), in.raw(), out.raw(), in.numel(), stream), "Cast");
}

std::string cast_reason(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) {
  if (in.empty() || !in[0].present) return "needs input";
  if (!in_dtypes(in[0].dtype, Dtypes::kAll)) return dtype_reason(in[0].dtype);
  if (out.empty() || !in_dtypes(out[0].dtype, Dtypes::kAll)) return "target " + dtype_reason(out[0].dtype);
  return {};
}

// The target dtype is the output's (infer() set it from 'to', which the CPU kernel checks).
class CastKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    return cast_reason(in, out);
  }
  Status compute(CudaComputeContext& ctx) const override {
    return cast_into(ctx.input(0), ctx.output(0), ctx.stream());
  }
};

using AddKernel = BinaryKernel<BinaryOp::kAdd, Dtypes::kNumeric>;
using SubKernel = BinaryKernel<BinaryOp::kSub, Dtypes::kNumeric>;
using MulKernel = BinaryKernel<BinaryOp::kMul, Dtypes::kNumeric>;
using DivKernel = BinaryKernel<BinaryOp::kDiv, Dtypes::kNumeric>;
using ModKernel = BinaryKernel<BinaryOp::kMod, Dtypes::kNumeric>;
using BitShiftKernel = BinaryKernel<BinaryOp::kShiftLeft, Dtypes::kUnsigned>;
using EqualKernel = BinaryKernel<BinaryOp::kEqual, Dtypes::kAll>;
using LessKernel = BinaryKernel<BinaryOp::kLess, Dtypes::kNumeric>;
using GreaterKernel = BinaryKernel<BinaryOp::kGreater, Dtypes::kNumeric>;
using LessEqualKernel = BinaryKernel<BinaryOp::kLessEqual, Dtypes::kNumeric>;
using GreaterEqualKernel = BinaryKernel<BinaryOp::kGreaterEqual, Dtypes::kNumeric>;
using AndKernel = BinaryKernel<BinaryOp::kAnd, Dtypes::kBool>;
using OrKernel = BinaryKernel<BinaryOp::kOr, Dtypes::kBool>;
using XorKernel = BinaryKernel<BinaryOp::kXor, Dtypes::kBool>;
using MaxKernel = VariadicKernel<BinaryOp::kMax, Dtypes::kNumeric, false>;
using MinKernel = VariadicKernel<BinaryOp::kMin, Dtypes::kNumeric, false>;
using SumKernel = VariadicKernel<BinaryOp::kAdd, Dtypes::kFloat, false>;
using MeanKernel = VariadicKernel<BinaryOp::kAdd, Dtypes::kFloat, true>;

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("", Add, AddKernel);
INGOT_REGISTER_CUDA_KERNEL("", Sub, SubKernel);
INGOT_REGISTER_CUDA_KERNEL("", Mul, MulKernel);
INGOT_REGISTER_CUDA_KERNEL("", Div, DivKernel);
INGOT_REGISTER_CUDA_KERNEL("", Mod, ModKernel);
INGOT_REGISTER_CUDA_KERNEL("", Pow, PowKernel);
INGOT_REGISTER_CUDA_KERNEL("", BitShift, BitShiftKernel);
INGOT_REGISTER_CUDA_KERNEL("", Equal, EqualKernel);
INGOT_REGISTER_CUDA_KERNEL("", Less, LessKernel);
INGOT_REGISTER_CUDA_KERNEL("", Greater, GreaterKernel);
INGOT_REGISTER_CUDA_KERNEL("", LessOrEqual, LessEqualKernel);
INGOT_REGISTER_CUDA_KERNEL("", GreaterOrEqual, GreaterEqualKernel);
INGOT_REGISTER_CUDA_KERNEL("", And, AndKernel);
INGOT_REGISTER_CUDA_KERNEL("", Or, OrKernel);
INGOT_REGISTER_CUDA_KERNEL("", Xor, XorKernel);
INGOT_REGISTER_CUDA_KERNEL("", Where, WhereKernel);
INGOT_REGISTER_CUDA_KERNEL("", PRelu, PReluKernel);
INGOT_REGISTER_CUDA_KERNEL("", Max, MaxKernel);
INGOT_REGISTER_CUDA_KERNEL("", Min, MinKernel);
INGOT_REGISTER_CUDA_KERNEL("", Sum, SumKernel);
INGOT_REGISTER_CUDA_KERNEL("", Mean, MeanKernel);


#define INGOT_EW_UNARY(Op, Enum, Set)                                \
  using Op##Kernel = UnaryKernel<UnaryOp::Enum, Dtypes::Set>;        \
  INGOT_REGISTER_CUDA_KERNEL("", Op, Op##Kernel)

INGOT_EW_UNARY(Neg, kNeg, kSigned);
INGOT_EW_UNARY(Abs, kAbs, kNumeric);
INGOT_EW_UNARY(Sign, kSign, kNumeric);
INGOT_EW_UNARY(Relu, kRelu, kSigned);
INGOT_EW_UNARY(Not, kNot, kBool);
INGOT_EW_UNARY(Sqrt, kSqrt, kFloat);
INGOT_EW_UNARY(Reciprocal, kReciprocal, kFloat);
INGOT_EW_UNARY(Exp, kExp, kFloat);
INGOT_EW_UNARY(Log, kLog, kFloat);
INGOT_EW_UNARY(Erf, kErf, kFloat);
INGOT_EW_UNARY(Sin, kSin, kFloat);
INGOT_EW_UNARY(Cos, kCos, kFloat);
INGOT_EW_UNARY(Tan, kTan, kFloat);
INGOT_EW_UNARY(Asin, kAsin, kFloat);
INGOT_EW_UNARY(Acos, kAcos, kFloat);
INGOT_EW_UNARY(Atan, kAtan, kFloat);
INGOT_EW_UNARY(Sinh, kSinh, kFloat);
INGOT_EW_UNARY(Cosh, kCosh, kFloat);
INGOT_EW_UNARY(Asinh, kAsinh, kFloat);
INGOT_EW_UNARY(Acosh, kAcosh, kFloat);
INGOT_EW_UNARY(Atanh, kAtanh, kFloat);
INGOT_EW_UNARY(Floor, kFloor, kFloat);
INGOT_EW_UNARY(Ceil, kCeil, kFloat);
INGOT_EW_UNARY(Round, kRound, kFloat);
INGOT_EW_UNARY(Sigmoid, kSigmoid, kFloat);
INGOT_EW_UNARY(Tanh, kTanh, kFloat);
INGOT_EW_UNARY(Softplus, kSoftplus, kFloat);
INGOT_EW_UNARY(Softsign, kSoftsign, kFloat);
INGOT_EW_UNARY(Mish, kMish, kFloat);
INGOT_EW_UNARY(HardSwish, kHardSwish, kFloat);
INGOT_EW_UNARY(Gelu, kGeluErf, kFloat);
INGOT_EW_UNARY(LeakyRelu, kLeakyRelu, kFloat);
INGOT_EW_UNARY(Elu, kElu, kFloat);
INGOT_EW_UNARY(Selu, kSelu, kFloat);
INGOT_EW_UNARY(Celu, kCelu, kFloat);
INGOT_EW_UNARY(HardSigmoid, kHardSigmoid, kFloat);
INGOT_EW_UNARY(ThresholdedRelu, kThresholdedRelu, kFloat);
INGOT_EW_UNARY(Shrink, kShrink, kNumeric);
INGOT_EW_UNARY(IsNaN, kIsNaN, kFloat);
INGOT_EW_UNARY(IsInf, kIsInf, kFloat);
#undef INGOT_EW_UNARY

INGOT_REGISTER_CUDA_KERNEL("", Clip, ClipKernel);
INGOT_REGISTER_CUDA_KERNEL("", Cast, CastKernel);
INGOT_REGISTER_CUDA_KERNEL("", CastLike, CastKernel);

}  // namespace ingot::cuda
