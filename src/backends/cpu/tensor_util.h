// Private helpers shared by the tensor-manipulation kernels (tensor_*.cc): input checks,
// index reading with range errors, and byte-moving copy loops (strided copy, permute).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot::tensor_ops {

inline std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

inline std::string input_desc(int i, const char* name) {
  return "input " + std::to_string(i) + " (" + name + ")";
}

// Checks the number of inputs and that the first `required` are present.
inline Status check_input_count(const InferContext& ctx, int required, int max) {
  if (ctx.num_inputs() < required || ctx.num_inputs() > max) {
    std::string want = required == max ? std::to_string(required)
                                       : std::to_string(required) + " to " + std::to_string(max);
    return invalid_model("expects " + want + " inputs, got " + std::to_string(ctx.num_inputs()));
  }
  for (int i = 0; i < required; ++i)
    if (!ctx.has_input(i)) return invalid_model("input " + std::to_string(i) + " is required but missing");
  return Status::ok();
}

// The input's dtype can be stored and moved by ingot (numeric or bool).
inline Status check_storable(const InferContext& ctx, int i, const char* name) {
  DType t = ctx.input_dtype(i);
  if (!dtype_is_supported(t) || dtype_size(t) == 0 || dtype_size(t) > 8)
    return unsupported(input_desc(i, name) + " has dtype " + dtype_name(t) + ", which ingot does not support here");
  return Status::ok();
}

inline Status check_index_dtype(const InferContext& ctx, int i, const char* name) {
  DType t = ctx.input_dtype(i);
  if (t != DType::kInt32 && t != DType::kInt64)
    return invalid_model(input_desc(i, name) + " must be int32 or int64, got " + dtype_name(t));
  return Status::ok();
}

inline Status check_same_dtype(const InferContext& ctx, int a, int b) {
  if (ctx.input_dtype(a) != ctx.input_dtype(b))
    return invalid_model("input " + std::to_string(b) + " has dtype " + dtype_name(ctx.input_dtype(b)) +
                         " but input " + std::to_string(a) + " has dtype " + dtype_name(ctx.input_dtype(a)));
  return Status::ok();
}

// Reads a 1-D (or scalar) integer tensor's values.
inline Expected<std::vector<int64_t>> read_int_list(const Tensor& t, int i, const char* name) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return invalid_model(input_desc(i, name) + " must be int32 or int64, got " + dtype_name(t.dtype()));
  if (t.rank() > 1) return invalid_argument(input_desc(i, name) + " must be 1-D, got shape " + shape_str(t.shape()));
  return t.to_int_vector();
}

// Reads a single-element tensor as int64.
inline Expected<int64_t> read_int_scalar(const Tensor& t, int i, const char* name) {
  if (t.numel() != 1)
    return invalid_argument(input_desc(i, name) + " must have exactly one element, got shape " + shape_str(t.shape()));
  if (!dtype_is_integer(t.dtype()))
    return invalid_model(input_desc(i, name) + " must be an integer, got " + dtype_name(t.dtype()));
  return t.scalar_as_int(0);
}

// Normalises a possibly negative index against `dim`; error names input, value and axis.
inline Status fix_index(int64_t& v, int64_t dim, int i, const char* name, int axis) {
  int64_t orig = v;
  if (v < 0) v += dim;
  if (v < 0 || v >= dim) {
    return invalid_argument(input_desc(i, name) + " value " + std::to_string(orig) + " is out of range for axis " +
                            std::to_string(axis) + " of size " + std::to_string(dim));
  }
  return Status::ok();
}

// Reads an index tensor (int32/int64) into int64 with negative values normalised.
inline Expected<std::vector<int64_t>> read_indices(const Tensor& t, int64_t dim, int i, const char* name, int axis) {
  std::vector<int64_t> v(size_t(t.numel()));
  if (t.dtype() == DType::kInt64) {
    if (!v.empty()) std::memcpy(v.data(), t.raw(), v.size() * 8);
  } else {
    const int32_t* p = t.data<int32_t>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = p[k];
  }
  for (auto& x : v) INGOT_RETURN_IF_ERROR(fix_index(x, dim, i, name, axis));
  return v;
}

inline int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e && i < s.size(); ++i) n *= s[i];
  return n;
}

// A value of type T from a double (for fill values, one-hot on/off values and the like).
template <class T> T from_double(double v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) return T(float(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

// A comparable/arithmetic view of T: float for the 16-bit float types, T otherwise.
template <class T> auto arith(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) return float(v);
  else return v;
}

template <class T> bool is_nonzero(T v) { return arith(v) != decltype(arith(v))(0); }

// Refuses output shapes whose size overflows or is absurd (shapes that come from input values).
// GatherElements/ScatterElements: indices have data's rank and fit inside it off `axis`.
inline Status check_elements_indices(const Shape& d, const Shape& is, int a) {
  if (is.size() != d.size())
    return invalid_argument("input 1 (indices) has shape " + shape_str(is) + " but must have the rank of data " +
                            shape_str(d));
  for (size_t k = 0; k < d.size(); ++k)
    if (int(k) != a && is[k] > d[k])
      return invalid_argument("input 1 (indices) shape " + shape_str(is) + " exceeds data shape " + shape_str(d) +
                              " on axis " + std::to_string(k));
  return Status::ok();
}

inline Status check_output_size(const Shape& s, size_t esize) {
  __int128 n = __int128(std::max<size_t>(esize, 1));
  for (int64_t d : s) {
    if (d < 0) return invalid_argument("output shape " + shape_str(s) + " has a negative dimension");
    n *= d;
    if (n > (__int128(1) << 40))
      return invalid_argument("output shape " + shape_str(s) + " is too large to allocate");
  }
  return Status::ok();
}

// Fills n elements of size `esize` at dst with the element at `value`.
inline void fill_bytes(uint8_t* dst, int64_t n, const void* value, size_t esize) {
  if (n <= 0) return;
  bool all_zero = true;
  for (size_t b = 0; b < esize; ++b) all_zero &= static_cast<const uint8_t*>(value)[b] == 0;
  if (all_zero) {
    std::memset(dst, 0, size_t(n) * esize);
    return;
  }
  dispatch_by_size(esize == 1 ? DType::kUInt8 : esize == 2 ? DType::kUInt16 : esize == 4 ? DType::kUInt32 : DType::kUInt64,
                   [&](auto tag) {
                     using T = typename decltype(tag)::type;
                     T v;
                     std::memcpy(&v, value, sizeof(T));
                     T* d = reinterpret_cast<T*>(dst);
                     std::fill(d, d + n, v);
                   });
}

// Copies into a contiguous output of `out_shape` from `in` where output element (i0..ik) reads
// in[sum(ij * in_strides[j])] (strides in elements; may be 0 for broadcast or negative).
void strided_copy(const void* in, const Shape& out_shape, const std::vector<int64_t>& in_strides, size_t esize,
                  void* out);

// out = transpose(in, perm): out.shape[i] = in_shape[perm[i]]. Blocked for cache locality.
void permute_copy(const void* in, const Shape& in_shape, const std::vector<int>& perm, size_t esize, void* out);

}  // namespace ingot::tensor_ops
