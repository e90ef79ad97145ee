// Device-side helpers shared by the .cu files: element types and float conversion, launch sizes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

// Loads and stores every float storage type through float (the arithmetic type of all
// elementwise and normalisation kernels).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// V elements of T moved as one access (16 bytes for 8 halves or 4 floats), converted through
// float.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ void load_floats(const T* p, float (&out)[V]) {
  const Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(p);
#pragma unroll
  for (int j = 0; j < V; ++j) out[j] = to_float(pk.v[j]);
}

template <class T, int V>
__device__ __forceinline__ void store_floats(T* p, const float (&in)[V]) {
  Pack<T, V> pk;
#pragma unroll
  for (int j = 0; j < V; ++j) pk.v[j] = from_float<T>(in[j]);
  *reinterpret_cast<Pack<T, V>*>(p) = pk;
}

// Blocks of `threads` covering n elements, capped for grid-stride loops.
inline unsigned blocks_for(int64_t n, int threads, int64_t cap = 65535 * 8) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return unsigned(b < cap ? b : cap);
}

// Calls f(T{}) with the device storage type of a float DType; false for other dtypes.
template <class F> bool dispatch_device_float(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(float{}); return true;
    case DType::kFloat16: f(__half{}); return true;
    case DType::kBFloat16: f(__nv_bfloat16{}); return true;
    default: return false;
  }
}

}  // namespace ingot::cuda
