// Helpers shared by the floating-point kernels (normalizations, softmax, resize, sampling).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "runtime/kernel.h"

namespace ingot::cpu {

// The accumulator type: half types and float accumulate in float, double in double.
template <class T> using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A small tensor's values as doubles (scales, sizes, statistics), whatever its numeric dtype.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  if (!dispatch_float(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = double(p[i]);
      })) {
    for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.scalar_as_double(i);
  }
  return v;
}

// Input i must have a floating-point dtype; `name` is the spec's name for it.
inline Status check_float(const InferContext& ctx, int i, const char* name) {
  if (!dtype_is_float(ctx.input_dtype(i))) {
    return invalid_argument("input " + std::to_string(i) + " (" + name + ") has dtype " +
                            dtype_name(ctx.input_dtype(i)) + "; expected float16, bfloat16, float32 or float64");
  }
  return Status::ok();
}

}  // namespace ingot::cpu
