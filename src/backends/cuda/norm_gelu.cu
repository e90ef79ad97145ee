// ingot.Gelu: y = 0.5 x (1 + erf(x / sqrt 2)), or the tanh form
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in float for every storage type.
// Memory-bound: 16-byte loads and stores over the aligned body, then the < 8 tail elements.
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/norm_impl.h"

namespace ingot::cuda {
namespace {

template <bool kTanh>
__device__ __forceinline__ float gelu(float x) {
  if constexpr (kTanh) {
    const float t = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(t));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
  }
}

// Vectors [0, nvec) through V-wide packs; elements [nvec·V, n) one by one.
template <class T, int V, bool kTanh>
__global__ void gelu_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  wait_prior_grids();
  allow_dependent_grids();
  const int64_t nvec = n / V;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const Pack<T, V>* xv = reinterpret_cast<const Pack<T, V>*>(x);
  Pack<T, V>* yv = reinterpret_cast<Pack<T, V>*>(y);
  for (int64_t i = first; i < nvec; i += stride) {
    Pack<T, V> p = xv[i];
#pragma unroll
    for (int j = 0; j < V; ++j) p.v[j] = from_float<T>(gelu<kTanh>(to_float(p.v[j])));
    yv[i] = p;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) y[i] = from_float<T>(gelu<kTanh>(to_float(x[i])));
}

template <class T, bool kTanh>
cudaError_t launch_typed(const T* x, T* y, int64_t n, int sm_count, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  constexpr int kThreads = 256;
  const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  // Enough blocks to fill the GPU a few times over; the grid-stride loop covers the rest.
  const int64_t cap = sm_count > 0 ? int64_t(sm_count) * 8 : 65535;
  if (vec)
    return launch_dependent(gelu_kernel<T, V, kTanh>, blocks_for(n / V + 1, kThreads, cap), kThreads, 0, stream, x, y,
                            n);
  return launch_dependent(gelu_kernel<T, 1, kTanh>, blocks_for(n, kThreads, cap), kThreads, 0, stream, x, y, n);
}

}  // namespace

cudaError_t launch_gelu(const void* x, void* y, DType dtype, int64_t n, bool tanh_approx, int sm_count,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    e = tanh_approx ? launch_typed<T, true>(xt, yt, n, sm_count, stream)
                    : launch_typed<T, false>(xt, yt, n, sm_count, stream);
  });
  return e;
}

}  // namespace ingot::cuda
