// Turns a runtime DType into a compile-time element type:
//   dispatch_float(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
// Each returns false (and calls nothing) when t is not in its set, so a kernel can report
// "unsupported dtype" through its Status.
#pragma once

#include "ingot/dtype.h"

namespace ingot {

template <class T> struct TypeTag { using type = T; };

template <class F> bool dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(TypeTag<float>{}); return true;
    case DType::kFloat64: f(TypeTag<double>{}); return true;
    case DType::kFloat16: f(TypeTag<float16>{}); return true;
    case DType::kBFloat16: f(TypeTag<bfloat16>{}); return true;
    default: return false;
  }
}

template <class F> bool dispatch_integer(DType t, F&& f) {
  switch (t) {
    case DType::kInt8: f(TypeTag<int8_t>{}); return true;
    case DType::kInt16: f(TypeTag<int16_t>{}); return true;
    case DType::kInt32: f(TypeTag<int32_t>{}); return true;
    case DType::kInt64: f(TypeTag<int64_t>{}); return true;
    case DType::kUInt8: f(TypeTag<uint8_t>{}); return true;
    case DType::kUInt16: f(TypeTag<uint16_t>{}); return true;
    case DType::kUInt32: f(TypeTag<uint32_t>{}); return true;
    case DType::kUInt64: f(TypeTag<uint64_t>{}); return true;
    default: return false;
  }
}

// Floats and integers (no bool).
template <class F> bool dispatch_numeric(DType t, F&& f) {
  return dispatch_float(t, f) || dispatch_integer(t, f);
}

// Every storable type, bool included.
template <class F> bool dispatch_all(DType t, F&& f) {
  if (t == DType::kBool) {
    f(TypeTag<bool>{});
    return true;
  }
  return dispatch_numeric(t, f);
}

// Dispatch on the element size only: for ops that move bytes without looking at them.
template <class F> bool dispatch_by_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f(TypeTag<uint8_t>{}); return true;
    case 2: f(TypeTag<uint16_t>{}); return true;
    case 4: f(TypeTag<uint32_t>{}); return true;
    case 8: f(TypeTag<uint64_t>{}); return true;
    default: return false;
  }
}

}  // namespace ingot
