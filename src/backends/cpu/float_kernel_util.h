// Helpers shared by the floating-point kernels (normalizations, softmax, resize, sampling).
#pragma once

#include <cstring>
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

// A copy of t converted to `to` (a float type), or t itself when it already has that dtype.
inline Tensor converted(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  Tensor out(to, t.shape());
  dispatch_float(t.dtype(), [&](auto in_tag) {
    using I = typename decltype(in_tag)::type;
    dispatch_float(to, [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      const I* src = t.data<I>();
      O* dst = out.data<O>();
      for (int64_t i = 0; i < t.numel(); ++i) dst[i] = O(float(src[i]));
    });
  });
  return out;
}

// Runs a float32-only kernel body on float16/bfloat16 data: the float inputs are widened to
// float32, `body` computes float32 outputs, which are rounded back to the node's dtype. For
// fused ops whose fast paths are float32-only, so fp16/bf16 engines (and the CUDA backend's CPU
// fallback) still compute the same function, at the cost of the conversions.
template <class Body>
Status compute_via_float32(ComputeContext& ctx, DType dtype, Body&& body) {
  std::vector<Tensor> wide(size_t(ctx.num_inputs()));
  std::vector<const Tensor*> ins;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      ins.push_back(nullptr);
      continue;
    }
    const Tensor& t = ctx.input(i);
    wide[size_t(i)] = t.dtype() == dtype ? converted(t, DType::kFloat32) : t;
    ins.push_back(&wide[size_t(i)]);
  }
  std::vector<OutputMeta> metas;
  for (int o = 0; o < ctx.num_outputs(); ++o) {
    if (!ctx.has_output(o)) {
      metas.push_back({});
      continue;
    }
    Tensor& y = ctx.output(o);
    metas.push_back(OutputMeta{y.dtype() == dtype ? DType::kFloat32 : y.dtype(), y.shape(), false, true});
  }
  ComputeContext inner(ctx.node(), ins, metas, nullptr);
  INGOT_RETURN_IF_ERROR(body(inner));
  for (int o = 0; o < ctx.num_outputs(); ++o) {
    if (!ctx.has_output(o)) continue;
    Tensor& y = ctx.output(o);
    Tensor narrow = converted(inner.output(o), y.dtype());
    std::memcpy(y.raw(), narrow.raw(), y.nbytes());
  }
  return Status::ok();
}

}  // namespace ingot::cpu
