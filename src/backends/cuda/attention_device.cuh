// Device helpers shared by ingot.Attention's core kernels (attention.cu, attention_wgmma.cu) and
// the single-query kernel with absorbed keys (attention_absorbed.cu): mask elements as additive
// values, the base-2 softmax's pieces, quad reductions (packing to 16-bit pairs: half_pair.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/half_pair.cuh"
#include "ingot/dtype.h"

namespace ingot::cuda {

// kMaskBool: one byte, nonzero = attend (bool, int8, uint8); kMaskI32/I64 likewise for wider
// integers (an int64 attention_mask read without its Cast to bool).
enum MaskType : int { kMaskNone, kMaskBool, kMaskF32, kMaskF16, kMaskBF16, kMaskI32, kMaskI64 };

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

constexpr float kLog2e = 1.4426950408889634f;

// 2^x in one MUFU instruction: results below 2^-126 flush to 0 (irrelevant next to a softmax's
// largest term, which is 1). exp2f() adds a denormal fix-up of three more instructions.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// A mask value in the flash kernel's base-2 domain (· log2 e). A finite value stays finite, so a
// row masked with a finite filter (-3.4e38) keeps a defined softmax; -inf and NaN stay as they are.
__device__ __forceinline__ float mask_to_log2(float v) {
  const float x = v * kLog2e;
  return isinf(x) && !isinf(v) ? copysignf(3.402823466e38f, x) : x;
}

// Mask element `off` as the value added to the score.
template <class M> __device__ __forceinline__ float mask_add(const void* mask, int64_t off, float filter);
template <> __device__ __forceinline__ float mask_add<uint8_t>(const void* mask, int64_t off, float filter) {
  return static_cast<const uint8_t*>(mask)[off] ? 0.f : filter;
}
template <> __device__ __forceinline__ float mask_add<int32_t>(const void* mask, int64_t off, float filter) {
  return static_cast<const int32_t*>(mask)[off] ? 0.f : filter;
}
template <> __device__ __forceinline__ float mask_add<int64_t>(const void* mask, int64_t off, float filter) {
  return static_cast<const int64_t*>(mask)[off] ? 0.f : filter;
}
template <> __device__ __forceinline__ float mask_add<float>(const void* mask, int64_t off, float) {
  return static_cast<const float*>(mask)[off];
}
template <> __device__ __forceinline__ float mask_add<__half>(const void* mask, int64_t off, float) {
  return __half2float(static_cast<const __half*>(mask)[off]);
}
template <> __device__ __forceinline__ float mask_add<__nv_bfloat16>(const void* mask, int64_t off, float) {
  return __bfloat162float(static_cast<const __nv_bfloat16*>(mask)[off]);
}

// Mask element `off` as the value added to the score, by the runtime MaskType (warp-uniform).
__device__ __forceinline__ float mask_value(const void* mask, int type, int64_t off, float filter) {
  switch (type) {
    case kMaskBool: return mask_add<uint8_t>(mask, off, filter);
    case kMaskF32: return mask_add<float>(mask, off, filter);
    case kMaskF16: return mask_add<__half>(mask, off, filter);
    case kMaskBF16: return mask_add<__nv_bfloat16>(mask, off, filter);
    case kMaskI32: return mask_add<int32_t>(mask, off, filter);
    case kMaskI64: return mask_add<int64_t>(mask, off, filter);
    default: return 0.f;
  }
}

// The max and sum over the 4 lanes of a quad (lane / 4 equal): the lanes that hold one row of a
// tensor-core accumulator tile.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// One row of a 64-key tile of base-2 scores, held by a quad of lanes as 8 n-tiles of 2 columns
// (at(j, c): n-tile j, column c, the tensor-core accumulator layout), folded into the row's
// running max m and this thread's share of its sum l: the scores become their exponentials.
// Returns alpha, the factor by which the row's output so far must be rescaled.
template <class At>
__device__ __forceinline__ float online_softmax_row(At at, float& m, float& l) {
  float mx[8];  // a pairwise tree, not a 16-long dependent chain
#pragma unroll
  for (int j = 0; j < 8; ++j) mx[j] = fmaxf(at(j, 0), at(j, 1));
#pragma unroll
  for (int w = 4; w > 0; w >>= 1)
#pragma unroll
    for (int j = 0; j < w; ++j) mx[j] = fmaxf(mx[j], mx[j + w]);
  const float m_new = fmaxf(m, quad_max(mx[0]));
  // A row with only -inf so far subtracts 0, so 2^(-inf - 0) = 0 instead of NaN.
  const float m_use = m_new == neg_inf() ? 0.f : m_new;
  const float alpha = fast_exp2(m - m_use);
  m = m_new;
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    at(j, 0) = fast_exp2(at(j, 0) - m_use);
    at(j, 1) = fast_exp2(at(j, 1) - m_use);
    sum += at(j, 0) + at(j, 1);
  }
  l = l * alpha + sum;  // reduced over the quad at the end
  return alpha;
}

// The MaskType of a mask of dtype `dt` (kMaskNone when `mask` is null); -1: not a mask dtype.
inline int mask_type_of(const void* mask, DType dt) {
  if (!mask) return kMaskNone;
  switch (dt) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return kMaskBool;
    case DType::kInt32: return kMaskI32;
    case DType::kInt64: return kMaskI64;
    case DType::kFloat32: return kMaskF32;
    case DType::kFloat16: return kMaskF16;
    case DType::kBFloat16: return kMaskBF16;
    default: return -1;
  }
}

}  // namespace ingot::cuda
