// Device-side machinery shared by the elementwise .cu files: element types per DType, the
// compute type of each (float for float16/bfloat16), the CPU kernels' conversion rules,
// 16-byte packed loads, and broadcast offsets with fast 32-bit divmod.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/elementwise_impl.h"
#include "ir/scalar_semantics.h"

namespace ingot::cuda::ew {

constexpr int kThreads = 256;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// Half types compute in float; everything else in itself (as the CPU kernels do).
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// Wrapping integer arithmetic and float -> integer conversion: the CPU kernels' rules, one
// definition for both (ir/scalar_semantics.h).
using scalar::float_to_int;
using scalar::wrap_t;

template <class T>
__device__ __forceinline__ compute_t<T> load_c(T v) {
  if constexpr (is_half_v<T>) return to_float(v);
  else return v;
}
template <class T>
__device__ __forceinline__ T store_c(compute_t<T> v) {
  if constexpr (is_half_v<T>) return from_float<T>(v);
  else return v;
}

// An op's result (compute type, or bool) stored as TO.
template <class TO, class R>
__device__ __forceinline__ TO store_as(R r) {
  if constexpr (is_half_v<TO>) return from_float<TO>(r);
  else return TO(r);
}

// std::max / std::min exactly: NaN handling follows the argument order, which the CPU
// kernels' Clip, HardSigmoid and HardSwish results depend on.
template <class C> __device__ __forceinline__ C std_max(C a, C b) { return (a < b) ? b : a; }
template <class C> __device__ __forceinline__ C std_min(C a, C b) { return (b < a) ? b : a; }

// Converts one value between any two element types (the CPU's convert).
template <class TO, class TI>
__device__ __forceinline__ TO convert(TI v) {
  if constexpr (std::is_same_v<TO, TI>) {
    return v;
  } else if constexpr (std::is_same_v<TO, bool>) {
    return load_c(v) != compute_t<TI>(0);
  } else if constexpr (std::is_same_v<TI, bool>) {
    return store_c<TO>(compute_t<TO>(v ? 1 : 0));
  } else if constexpr (is_float_v<TO>) {
    if constexpr (is_half_v<TO> && !is_half_v<TI>) {
      return from_float<TO>(float(v));  // double and integers round to float first, as on the CPU
    } else {
      return store_c<TO>(compute_t<TO>(load_c(v)));
    }
  } else if constexpr (is_float_v<TI>) {
    if constexpr (std::is_same_v<TI, float> && sizeof(TO) <= 4 && std::is_signed_v<TO>) {
      if (v > -2147483648.f && v < 2147483648.f) return TO(int32_t(v));  // no double math
    }
    return float_to_int<TO>(double(load_c(v)));
  } else {
    return TO(v);  // int -> int: modular
  }
}

// ---------------------------------------------------------------------------------------
// Packed loads: V consecutive elements moved as 16-byte (or smaller) words. The pointer
// must be aligned to alignof(Pack), which the launchers check.
template <class T, int V>
struct alignas((sizeof(T) * V >= 16) ? 16 : sizeof(T) * V) Pack {
  T v[V];
};

// Elements per thread so that the widest operand moves 16 bytes.
template <class... T>
constexpr int pack_width() {
  constexpr size_t w = std::max({sizeof(T)...});
  return int(16 / w);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Unsigned 32-bit division by a divisor fixed at launch (Hacker's Delight / CUTLASS
// FastDivmod): q = (umulhi(n, m) + n) >> s, exact for n < 2^31.
struct FastDiv {
  uint32_t d = 1, m = 1, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    while ((uint64_t(1) << s) < divisor) ++s;
    m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << s) - divisor)) / divisor + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

// The broadcast geometry in kernel-argument form. I is uint32_t (numel < 2^31, fast divmod)
// or int64_t (plain division).
template <class I, int N>
struct Geometry {
  int rank;
  I numel;
  std::conditional_t<std::is_same_v<I, uint32_t>, FastDiv, int64_t> dims[kMaxRank];
  I strides[N][kMaxRank];
};

template <class I, int N>
Geometry<I, N> to_geometry(const Broadcast& b) {
  Geometry<I, N> g{};
  g.rank = b.rank;
  g.numel = I(b.numel);
  for (int d = 0; d < b.rank; ++d) {
    if constexpr (std::is_same_v<I, uint32_t>) g.dims[d] = FastDiv(uint32_t(b.dims[d]));
    else g.dims[d] = b.dims[d];
    for (int k = 0; k < N; ++k) g.strides[k][d] = I(b.strides[k][d]);
  }
  return g;
}

// Element offsets of output element i in each operand.
template <class I, int N>
__device__ __forceinline__ void offsets(const Geometry<I, N>& g, I i, I (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
  for (int d = 0; d < kMaxRank - 1; ++d) {
    if (d + 1 >= g.rank) break;
    I q, r;
    if constexpr (std::is_same_v<I, uint32_t>) {
      q = g.dims[d].div(i);
      r = i - q * g.dims[d].d;
    } else {
      q = i / g.dims[d];
      r = i - q * g.dims[d];
    }
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * g.strides[k][d];
    i = q;
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] += i * g.strides[k][g.rank - 1];
}

// Innermost dim length in elements (the vectorised path needs it to be a multiple of V).
template <class I, int N>
inline int64_t inner_dim(const Geometry<I, N>& g) {
  if constexpr (std::is_same_v<I, uint32_t>) return g.dims[0].d;
  else return g.dims[0];
}

// ---------------------------------------------------------------------------------------
// DType -> device element type (tag dispatch); each returns false outside its set.
template <class T> struct Tag { using type = T; };

template <class F> bool dispatch_dev_float(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(Tag<float>{}); return true;
    case DType::kFloat16: f(Tag<__half>{}); return true;
    case DType::kBFloat16: f(Tag<__nv_bfloat16>{}); return true;
    case DType::kFloat64: f(Tag<double>{}); return true;
    default: return false;
  }
}

template <class F> bool dispatch_dev_int(DType t, F&& f) {
  switch (t) {
    case DType::kInt8: f(Tag<int8_t>{}); return true;
    case DType::kInt16: f(Tag<int16_t>{}); return true;
    case DType::kInt32: f(Tag<int32_t>{}); return true;
    case DType::kInt64: f(Tag<int64_t>{}); return true;
    case DType::kUInt8: f(Tag<uint8_t>{}); return true;
    case DType::kUInt16: f(Tag<uint16_t>{}); return true;
    case DType::kUInt32: f(Tag<uint32_t>{}); return true;
    case DType::kUInt64: f(Tag<uint64_t>{}); return true;
    default: return false;
  }
}

template <class F> bool dispatch_dev_all(DType t, F&& f) {
  if (t == DType::kBool) {
    f(Tag<bool>{});
    return true;
  }
  return dispatch_dev_float(t, f) || dispatch_dev_int(t, f);
}

// Which element types an op accepts (the CPU kernel's dtype set).
enum class Set { kFloat, kSigned, kNumeric, kUnsigned, kBool, kAll };

template <class T>
constexpr bool in_set(Set s) {
  constexpr bool is_bool = std::is_same_v<T, bool>;
  constexpr bool is_int = std::is_integral_v<T> && !is_bool;
  switch (s) {
    case Set::kFloat: return is_float_v<T>;
    case Set::kSigned: return is_float_v<T> || (is_int && std::is_signed_v<T>);
    case Set::kNumeric: return is_float_v<T> || is_int;
    case Set::kUnsigned: return is_int && std::is_unsigned_v<T>;
    case Set::kBool: return is_bool;
    case Set::kAll: return true;
  }
  return false;
}

}  // namespace ingot::cuda::ew
