// Two floats as one register of two 16-bit values and back (fp16 or bf16, round to nearest): the
// accumulator pairs that the tensor-core kernels write out, and the parameters they read in.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace ingot::cuda {

// Two floats as one register of two 16-bit values (lo = first, the lower column).
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// pack2's inverse: the register's two 16-bit values as floats (x = the lower column).
template <class T> __device__ __forceinline__ float2 unpack2(uint32_t b);
template <> __device__ __forceinline__ float2 unpack2<__half>(uint32_t b) {
  return __half22float2(*reinterpret_cast<const __half2*>(&b));
}
template <> __device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t b) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&b));
}

}  // namespace ingot::cuda
