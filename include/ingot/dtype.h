// Element types. The numbering is ONNX's TensorProto.DataType, so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace ingot {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// IEEE 754 half precision, stored as bits; arithmetic happens in float.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow rounds to inf
    if (abs < 0x38800000u) {                                     // subnormal or zero in half
      float af;
      std::memcpy(&af, &abs, 4);
      // scale into the subnormal range and round to nearest even with the FPU
      float scaled = af * 16777216.0f;  // 2^24
      uint32_t m = uint32_t(__builtin_nearbyintf(scaled));
      return uint16_t(sign | m);
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return uint16_t(sign | (abs >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {
        float f = float(mant) / 16777216.0f;  // mant * 2^-24
        std::memcpy(&out, &f, 4);
        out |= sign;
      }
    } else if (exp == 31) {
      out = sign | 0x7f800000u | (mant << 13);
    } else {
      out = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &out, 4);
    return f;
  }
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// Size of one element in bytes; 0 for types without a fixed size (string, undefined).
size_t dtype_size(DType t);
// ONNX's spelling: "float32", "int64", "float16", ...
std::string dtype_name(DType t);
bool dtype_is_float(DType t);    // float16/bfloat16/float32/float64
bool dtype_is_integer(DType t);  // signed or unsigned integers (not bool)
bool dtype_is_signed(DType t);
// ingot can store and compute with it (every numeric type and bool; not string or complex).
bool dtype_is_supported(DType t);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<float16>() { return DType::kFloat16; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::kBFloat16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

}  // namespace ingot
