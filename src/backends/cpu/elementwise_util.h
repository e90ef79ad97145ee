// Shared machinery of the elementwise kernels (private to src/backends/cpu/elementwise_*.cc):
// a numpy broadcast walker that collapses contiguous dims and hands out rows whose operand
// strides are 0 or 1, typed row loops over a functor, dtype sets, float->int conversion.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "ir/scalar_semantics.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot::ew {

// Half types compute in float; everything else in itself.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// Wrapping integer arithmetic and float -> integer conversion: the rules every backend shares.
using scalar::float_to_int;
using scalar::wrap_t;

// Converts one value between any two storable element types.
template <class TO, class TI>
inline TO convert(TI v) {
  if constexpr (std::is_same_v<TO, TI>) {
    return v;
  } else if constexpr (std::is_same_v<TO, bool>) {
    return compute_t<TI>(v) != compute_t<TI>(0);
  } else if constexpr (std::is_same_v<TI, bool>) {
    return TO(compute_t<TO>(v ? 1 : 0));
  } else if constexpr (is_float_v<TO>) {
    if constexpr (is_half_v<TO> && std::is_same_v<TI, double>) return TO(float(v));
    else if constexpr (is_half_v<TO> && std::is_integral_v<TI>) return TO(float(v));
    else return TO(compute_t<TO>(compute_t<TI>(v)));
  } else if constexpr (is_float_v<TI>) {  // float -> int
    if constexpr (std::is_same_v<TI, float> && sizeof(TO) <= 4 && std::is_signed_v<TO>) {
      // fast path that vectorises: in-range floats convert directly
      float f = v;
      if (f > -2147483648.f && f < 2147483648.f) return TO(int32_t(f));
      return float_to_int<TO>(double(f));
    } else {
      return float_to_int<TO>(double(compute_t<TI>(v)));
    }
  } else {
    return TO(v);  // int -> int: modular
  }
}

// ---------------------------------------------------------------------------------------
// Broadcast plan: dims collapsed so that every operand's innermost stride is 0 or 1.
template <size_t K>
struct BroadcastPlan {
  std::vector<int64_t> dims;                     // collapsed output dims, outer to inner
  std::array<std::vector<int64_t>, K> strides;   // per operand, per collapsed dim
  int64_t numel = 0;
};

template <size_t K>
BroadcastPlan<K> make_plan(const std::array<const Shape*, K>& ins, const Shape& out) {
  BroadcastPlan<K> p;
  p.numel = shape_numel(out);
  std::array<std::vector<int64_t>, K> full;
  for (size_t k = 0; k < K; ++k) full[k] = broadcast_strides(*ins[k], out);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!p.dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < K; ++k)
        if (p.strides[k].back() != full[k][d] * out[d]) merge = false;
      if (merge) {
        p.dims.back() *= out[d];
        for (size_t k = 0; k < K; ++k) p.strides[k].back() = full[k][d];
        continue;
      }
    }
    p.dims.push_back(out[d]);
    for (size_t k = 0; k < K; ++k) p.strides[k].push_back(full[k][d]);
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t k = 0; k < K; ++k) p.strides[k].push_back(0);
  }
  return p;
}

// Calls row(out_offset, offsets[K], inner_strides[K], n) for runs of the output, in parallel.
template <size_t K, class Row>
void walk(const BroadcastPlan<K>& p, int64_t cost, Row&& row) {
  const int r = int(p.dims.size());
  const int64_t inner = p.dims[size_t(r - 1)];
  std::array<int64_t, K> istr;
  for (size_t k = 0; k < K; ++k) istr[k] = p.strides[k][size_t(r - 1)];
  parallel_for(p.numel, cost, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(size_t(r), 0);
    std::array<int64_t, K> off{};
    int64_t rem = b;
    for (int d = r - 1; d >= 0; --d) {
      idx[size_t(d)] = rem % p.dims[size_t(d)];
      rem /= p.dims[size_t(d)];
      for (size_t k = 0; k < K; ++k) off[k] += idx[size_t(d)] * p.strides[k][size_t(d)];
    }
    int64_t pos = b;
    while (pos < e) {
      int64_t n = std::min(inner - idx[size_t(r - 1)], e - pos);
      row(pos, off, istr, n);
      pos += n;
      idx[size_t(r - 1)] += n;
      for (size_t k = 0; k < K; ++k) off[k] += n * istr[k];
      if (idx[size_t(r - 1)] == inner && pos < e) {
        idx[size_t(r - 1)] = 0;
        for (size_t k = 0; k < K; ++k) off[k] -= inner * istr[k];
        for (int d = r - 2; d >= 0; --d) {
          ++idx[size_t(d)];
          for (size_t k = 0; k < K; ++k) off[k] += p.strides[k][size_t(d)];
          if (idx[size_t(d)] < p.dims[size_t(d)]) break;
          idx[size_t(d)] = 0;
          for (size_t k = 0; k < K; ++k) off[k] -= p.dims[size_t(d)] * p.strides[k][size_t(d)];
        }
      }
    }
  });
}

// out = op(a, b) with numpy broadcasting; out already has the broadcast shape. Operands are
// converted to their compute type before op, the result cast to TO.
template <class TA, class TB, class TO, class Op>
void binary_compute(const Tensor& a, const Tensor& b, Tensor& out, const Op& op, int64_t cost = 1) {
  using CA = compute_t<TA>;
  using CB = compute_t<TB>;
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  auto plan = make_plan<2>({&a.shape(), &b.shape()}, out.shape());
  walk<2>(plan, cost, [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st,
                          int64_t n) {
    const TA* x = pa + off[0];
    const TB* y = pb + off[1];
    TO* z = po + o;
    if (st[0] && st[1]) {
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<TO>(op(CA(x[i]), CB(y[i])));
    } else if (st[0]) {
      const CB yv = CB(*y);
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<TO>(op(CA(x[i]), yv));
    } else if (st[1]) {
      const CA xv = CA(*x);
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<TO>(op(xv, CB(y[i])));
    } else {
      const TO v = static_cast<TO>(op(CA(*x), CB(*y)));
      for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  });
}

// out[i] = op(in[i]) over equal shapes.
template <class TI, class TO, class Op>
void unary_compute(const Tensor& in, Tensor& out, const Op& op, int64_t cost = 1) {
  using CI = compute_t<TI>;
  const TI* x = in.data<TI>();
  TO* y = out.data<TO>();
  parallel_for(in.numel(), cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = static_cast<TO>(op(CI(x[i])));
  });
}

// ---------------------------------------------------------------------------------------
// dtype sets

enum class Types { kFloat, kSigned, kNumeric, kInt, kUnsigned, kBool, kAll };

inline bool in_set(DType t, Types s) {
  switch (s) {
    case Types::kFloat: return dtype_is_float(t);
    case Types::kSigned: return dtype_is_float(t) || (dtype_is_integer(t) && dtype_is_signed(t));
    case Types::kNumeric: return dtype_is_float(t) || dtype_is_integer(t);
    case Types::kInt: return dtype_is_integer(t);
    case Types::kUnsigned: return dtype_is_integer(t) && !dtype_is_signed(t);
    case Types::kBool: return t == DType::kBool;
    case Types::kAll: return dtype_is_supported(t);
  }
  return false;
}

inline const char* set_name(Types s) {
  switch (s) {
    case Types::kFloat: return "float16, bfloat16, float32 or float64";
    case Types::kSigned: return "a float or signed integer type";
    case Types::kNumeric: return "a numeric type";
    case Types::kInt: return "an integer type";
    case Types::kUnsigned: return "uint8, uint16, uint32 or uint64";
    case Types::kBool: return "bool";
    case Types::kAll: return "a numeric or bool type";
  }
  return "?";
}

// Calls f(TypeTag<T>) for t when t is in S; false otherwise. Only the set's types are
// instantiated.
template <Types S, class F>
bool dispatch_set(DType t, F&& f) {
  if (!in_set(t, S)) return false;
  if constexpr (S == Types::kBool) {
    f(TypeTag<bool>{});
    return true;
  } else if constexpr (S == Types::kFloat) {
    return dispatch_float(t, f);
  } else if constexpr (S == Types::kSigned) {
    switch (t) {
      case DType::kInt8: f(TypeTag<int8_t>{}); return true;
      case DType::kInt16: f(TypeTag<int16_t>{}); return true;
      case DType::kInt32: f(TypeTag<int32_t>{}); return true;
      case DType::kInt64: f(TypeTag<int64_t>{}); return true;
      default: return dispatch_float(t, f);
    }
  } else if constexpr (S == Types::kUnsigned) {
    switch (t) {
      case DType::kUInt8: f(TypeTag<uint8_t>{}); return true;
      case DType::kUInt16: f(TypeTag<uint16_t>{}); return true;
      case DType::kUInt32: f(TypeTag<uint32_t>{}); return true;
      case DType::kUInt64: f(TypeTag<uint64_t>{}); return true;
      default: return false;
    }
  } else if constexpr (S == Types::kInt) {
    return dispatch_integer(t, f);
  } else if constexpr (S == Types::kNumeric) {
    return dispatch_numeric(t, f);
  } else {
    return dispatch_all(t, f);
  }
}

inline std::string input_label(int i, const char* name) {
  return "input " + std::to_string(i) + (name && *name ? std::string(" (") + name + ")" : std::string());
}

// Error for an input whose dtype is outside the op's set.
inline Status dtype_error(int i, const char* name, DType t, Types s) {
  std::string m = input_label(i, name) + " has dtype " + dtype_name(t) + ", expected " + set_name(s);
  return dtype_is_supported(t) ? invalid_model(m) : unsupported(m);
}

inline Status check_dtype(const InferContext& ctx, int i, const char* name, Types s) {
  if (!in_set(ctx.input_dtype(i), s)) return dtype_error(i, name, ctx.input_dtype(i), s);
  return Status::ok();
}

inline Status check_same_dtype(const InferContext& ctx, int i, const char* name, int j, const char* jname) {
  if (ctx.input_dtype(i) != ctx.input_dtype(j)) {
    return invalid_model(input_label(i, name) + " has dtype " + dtype_name(ctx.input_dtype(i)) + ", expected " +
                         dtype_name(ctx.input_dtype(j)) + " to match " + input_label(j, jname));
  }
  return Status::ok();
}

inline Status require_inputs(const InferContext& ctx, int n, const char* const* names) {
  for (int i = 0; i < n; ++i)
    if (!ctx.has_input(i)) return invalid_model("missing required " + input_label(i, names[i]));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------
// Vectorisable float exp (Cephes polynomial, ~1 ulp); flushes results below FLT_MIN to 0.
inline float fast_expf(float x) {
  const float hi = 88.7228391f, lo = -87.33654f;
  float xc = std::min(std::max(x, lo), hi);
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float y = ((((1.9875691500E-4f * r + 1.3981999507E-3f) * r + 8.3334519073E-3f) * r + 4.1665795894E-2f) * r +
             1.6666665459E-1f) * r + 5.0000001201E-1f;
  y = y * z + r + 1.0f;
  // 2^(n-1) * 2 keeps n = 128 finite; n = -126 gives 0 (results below FLT_MIN flush to 0)
  float p = std::bit_cast<float>(int32_t(n + 126.0f) << 23);
  float res = y * p * 2.0f;
  float big = x > hi ? std::numeric_limits<float>::infinity() : res;
  return x == x ? big : x;
}

// Vectorisable float tanh (Cephes): odd polynomial below 0.625, 1 - 2/(e^2|x| + 1) above.
inline float fast_tanhf(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float small = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z +
                  1.33314422036E-1f) * z - 3.33332819422E-1f) * z * x + x;
  float big = 1.0f - 2.0f / (fast_expf(2.0f * a) + 1.0f);
  big = std::copysign(big, x);
  return a < 0.625f ? small : big;  // NaN takes the second branch and stays NaN
}

}  // namespace ingot::ew
