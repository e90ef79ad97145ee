// The activations a product's epilogue or a pass after it applies (PointwiseActivation), in
// float: exact GELU (erf, ONNX Gelu and BERT's activation) and its tanh form with full-precision
// tanhf (cuBLASLt's GELU epilogue may use a faster, less exact tanh). With `act` a compile-time
// constant the switch folds away.
#pragma once

#include "backends/cuda/gemm_impl.h"

namespace ingot::cuda {

__device__ __forceinline__ float activate(float x, PointwiseActivation act) {
  switch (act) {
    case PointwiseActivation::kRelu: return x > 0.f ? x : 0.f;
    case PointwiseActivation::kTanh: return tanhf(x);
    case PointwiseActivation::kGeluErf: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case PointwiseActivation::kGeluTanh:
      return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

}  // namespace ingot::cuda
