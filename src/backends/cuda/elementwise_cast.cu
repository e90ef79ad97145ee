// Cast between every pair of element types with the CPU kernel's rules (elementwise_cast.cc):
// float -> int truncates toward zero (NaN -> 0, saturating at the int64 range, then wrapping
// into narrower types), anything -> bool is "!= 0", double and integers reach float16 and
// bfloat16 through float, half types round to nearest even.
// The precision pass puts float32 <-> float16/bfloat16 Casts at every engine boundary: a
// thread converts 16 bytes of the narrower type (8 halves: two 16-byte loads of float32,
// one 16-byte store), which keeps these at memory bandwidth.
#include "backends/cuda/elementwise_device.cuh"

namespace ingot::cuda::ew {
namespace {

template <class TI, class TO>
constexpr int cast_width() {
  return int(16 / std::min(sizeof(TI), sizeof(TO)));
}

template <class TI, class TO, int V>
__global__ void __launch_bounds__(kThreads) cast_kernel(const TI* __restrict__ x, TO* __restrict__ y, int64_t n) {
  const int64_t i0 = (int64_t(blockIdx.x) * kThreads + threadIdx.x) * V;
  if (i0 >= n) return;
  if (V > 1 && i0 + V <= n) {
    const Pack<TI, V> px = *reinterpret_cast<const Pack<TI, V>*>(x + i0);
    Pack<TO, V> py;
#pragma unroll
    for (int j = 0; j < V; ++j) py.v[j] = convert<TO>(px.v[j]);
    *reinterpret_cast<Pack<TO, V>*>(y + i0) = py;
    return;
  }
  for (int64_t i = i0; i < n && i < i0 + V; ++i) y[i] = convert<TO>(x[i]);
}

template <class TI, class TO>
cudaError_t run_cast(const void* x, void* y, int64_t n, cudaStream_t stream) {
  const TI* px = static_cast<const TI*>(x);
  TO* py = static_cast<TO*>(y);
  constexpr int V = cast_width<TI, TO>();
  if (aligned16(x) && aligned16(y)) {
    cast_kernel<TI, TO, V><<<blocks_for((n + V - 1) / V, kThreads, INT32_MAX), kThreads, 0, stream>>>(px, py, n);
  } else {
    cast_kernel<TI, TO, 1><<<blocks_for(n, kThreads, INT32_MAX), kThreads, 0, stream>>>(px, py, n);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_dev_all(from, [&](auto itag) {
    using TI = typename decltype(itag)::type;
    dispatch_dev_all(to, [&](auto otag) {
      using TO = typename decltype(otag)::type;
      if constexpr (!std::is_same_v<TI, TO>) e = run_cast<TI, TO>(x, y, n, stream);
    });
  });
  return e;
}

}  // namespace ingot::cuda::ew
