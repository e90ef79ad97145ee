// Arithmetic binary ops with broadcasting: Add Sub Mul Div Mod Pow Max Min PRelu BitShift.
// Each functor computes exactly what the CPU kernel's does (elementwise_binary.cc and
// elementwise_variadic.cc), in the same compute type: integers wrap, integer division by
// zero gives 0, Mod follows the divisor's sign unless fmod.
#include "backends/cuda/elementwise_binary.cuh"

namespace ingot::cuda::ew {
namespace {

struct AddF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) + wrap_t<C>(b));
    else return a + b;
  }
};
struct SubF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) - wrap_t<C>(b));
    else return a - b;
  }
};
struct MulF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return C(wrap_t<C>(a) * wrap_t<C>(b));
    else return a * b;
  }
};
// Integer division truncates toward zero; by zero gives 0 and MIN / -1 wraps.
struct DivF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
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
template <bool kFmod>
struct ModF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
        C r = C(a % b);
        if (!kFmod && r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
        return r;
      } else {
        return C(a % b);
      }
    } else {
      C r = fmod(a, b);
      if (!kFmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};
// Min/Max propagate NaN from either side (numpy's minimum/maximum).
struct MaxF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const { return (a > b || a != a) ? a : b; }
};
struct MinF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const { return (a < b || a != a) ? a : b; }
};
struct PReluF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C x, C s) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? C(wrap_t<C>(x) * wrap_t<C>(s)) : x;
    else return x < 0 ? x * s : x;
  }
};
template <bool kLeft>
struct ShiftF {
  static constexpr Set kSet = Set::kUnsigned;
  static constexpr bool kBoolOut = false;
  template <class C> __device__ C operator()(C a, C b) const {
    if (b >= C(sizeof(C) * 8)) return C(0);
    return kLeft ? C(a << b) : C(a >> b);
  }
};

// Float powers go through double: the CPU's pow is correctly rounded, CUDA's powf is not.
// x ** 2 is a multiply, as on the CPU's fast path (and exactly pow's rounded result).
struct PowF {
  static constexpr Set kSet = Set::kNumeric;
  static constexpr bool kBoolOut = false;
  template <class C, class E> __device__ C operator()(C a, E b) const {
    if constexpr (std::is_integral_v<C> && std::is_integral_v<E>) {
      return scalar::int_pow(a, int64_t(b));
    } else if constexpr (std::is_integral_v<C>) {
      return float_to_int<C>(pow(double(a), double(b)));
    } else {
      if (b == E(2)) return a * a;
      return C(pow(double(a), double(b)));
    }
  }
};

// Pow's exponent: the base's own dtype (floats; integers with integer exponents), or the
// int64 / float64 copy the kernel class converts a different exponent dtype into.
cudaError_t launch_pow(DType ta, DType tb, const void* a, const void* b, void* out, const Broadcast& br,
                       cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  const PowF op;
  if (ta == tb) return run_same_type(op, ta, a, b, out, br, stream);
  if (tb == DType::kInt64) {
    dispatch_dev_int(ta, [&](auto tag) {
      using T = typename decltype(tag)::type;
      e = run_binary<PowF, T, int64_t, T>(op, a, b, out, br, stream);
    });
  } else if (tb == DType::kFloat64) {
    dispatch_dev_all(ta, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) e = run_binary<PowF, T, double, T>(op, a, b, out, br, stream);
    });
  }
  return e;
}

}  // namespace

cudaError_t launch_binary(BinaryOp op, DType ta, DType tb, const void* a, const void* b, void* out,
                          const Broadcast& g, cudaStream_t stream) {
  if (op == BinaryOp::kPow) return launch_pow(ta, tb, a, b, out, g, stream);
  if (ta != tb) return cudaErrorInvalidValue;
  switch (op) {
    case BinaryOp::kAdd: return run_same_type(AddF{}, ta, a, b, out, g, stream);
    case BinaryOp::kSub: return run_same_type(SubF{}, ta, a, b, out, g, stream);
    case BinaryOp::kMul: return run_same_type(MulF{}, ta, a, b, out, g, stream);
    case BinaryOp::kDiv: return run_same_type(DivF{}, ta, a, b, out, g, stream);
    case BinaryOp::kMod: return run_same_type(ModF<false>{}, ta, a, b, out, g, stream);
    case BinaryOp::kFMod: return run_same_type(ModF<true>{}, ta, a, b, out, g, stream);
    case BinaryOp::kMax: return run_same_type(MaxF{}, ta, a, b, out, g, stream);
    case BinaryOp::kMin: return run_same_type(MinF{}, ta, a, b, out, g, stream);
    case BinaryOp::kPRelu: return run_same_type(PReluF{}, ta, a, b, out, g, stream);
    case BinaryOp::kShiftLeft: return run_same_type(ShiftF<true>{}, ta, a, b, out, g, stream);
    case BinaryOp::kShiftRight: return run_same_type(ShiftF<false>{}, ta, a, b, out, g, stream);
    default: return launch_compare(op, ta, a, b, out, g, stream);
  }
}

}  // namespace ingot::cuda::ew
