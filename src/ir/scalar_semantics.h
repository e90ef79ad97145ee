// Scalar rules that every backend must compute alike: integer arithmetic that wraps without
// undefined behaviour, float -> integer conversion, integer powers and Shrink. One definition,
// compiled for the host and (by nvcc) for the device, so the CPU kernels and the CUDA kernels
// cannot drift apart; the kernels' tests compare the two on the same inputs. No CUDA header is
// included: under nvcc the functions are also __device__, elsewhere plain inline.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define INGOT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define INGOT_HOST_DEVICE inline
#endif

namespace ingot::scalar {

// Unsigned type wide enough that arithmetic on it never promotes to signed int: wrapping
// integer add/sub/mul/neg without undefined behaviour.
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// float -> integer: NaN gives 0, values outside int64 saturate, the rest truncate toward zero
// and wrap into the target (as numpy's astype does on x86). `x != x` is the NaN test that
// compiles for both sides (nothing here is built with fast math).
template <class I>
INGOT_HOST_DEVICE I float_to_int(double x) {
  if (x != x) return I(0);
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (x >= 18446744073709551615.0) return ~uint64_t(0);
    if (x >= 9223372036854775808.0) return uint64_t(x);
  }
  if (x >= 9223372036854775807.0) return I(INT64_MAX);
  if (x <= -9223372036854775808.0) return I(INT64_MIN);
  return I(int64_t(x));
}

// a ** e for integers, wrapping as repeated multiplication would. A negative exponent truncates
// toward zero: 1 and -1 keep a magnitude of 1, |a| > 1 gives 0, and 0 (a division by zero) 0.
template <class C>
INGOT_HOST_DEVICE C int_pow(C a, int64_t e) {
  if (e < 0) {
    if (a == 1) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (a == C(-1)) return (e & 1) ? C(-1) : C(1);
    }
    return C(0);
  }
  wrap_t<C> r = 1, b = wrap_t<C>(a);
  while (e) {
    if (e & 1) r = wrap_t<C>(r * b);
    b = wrap_t<C>(b * b);
    e >>= 1;
  }
  return C(r);
}

// ONNX Shrink on a compute-type value (float, double or an integer): integers go through double
// and convert back as float_to_int does.
template <class C>
INGOT_HOST_DEVICE C shrink(C x, float lambd, float bias) {
  if constexpr (std::is_integral_v<C>) {
    const double v = double(x);
    const double r = v < -double(lambd) ? v + double(bias) : (v > double(lambd) ? v - double(bias) : 0.0);
    return float_to_int<C>(r);
  } else {
    return x < C(-lambd) ? x + C(bias) : (x > C(lambd) ? x - C(bias) : C(0));
  }
}

}  // namespace ingot::scalar
