// Products with a handful of output columns (a classifier's logits: N = 2 for DistilBERT and
// BERT sequence classification) as one kernel: cuBLASLt needs a padded copy of W for a width
// whose rows are not 16-byte multiples, a scratch product and a second kernel to cut (and widen)
// it into Y, about 7 us at batch 1 on an H100 for what is M·N dot products over K.
//
// One CTA per row of Y: its threads stride over K (activating each element of A first when asked),
// each keeping N partial sums in fp32, reduced over the warp by shuffles and over the CTA's warps
// through shared memory; thread n < N then adds the bias, applies the activation in fp32 and
// writes Y (in A's dtype or float32).
#include <algorithm>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/pointwise_activation.cuh"

namespace ingot::cuda {
namespace {

constexpr int kSkinnyThreads = 128;
constexpr int kSkinnyWarps = kSkinnyThreads / 32;

template <class T, class TY>
__global__ void __launch_bounds__(kSkinnyThreads)
    skinny_product_kernel(const T* __restrict__ a, const T* __restrict__ w, const T* __restrict__ bias,
                          TY* __restrict__ y, int64_t rows, int64_t K, int N, PointwiseActivation act, bool has_act,
                          PointwiseActivation in_act, bool has_in_act) {
  __shared__ float partial[kSkinnyWarps][kSkinnyMaxN];
  wait_prior_grids();
  allow_dependent_grids();
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* ar = a + r * K;
    float acc[kSkinnyMaxN] = {};
#pragma unroll 4
    for (int64_t k = threadIdx.x; k < K; k += kSkinnyThreads) {
      float x = to_float(ar[k]);
      if (has_in_act) x = to_float(from_float<T>(activate(x, in_act)));
      const T* wk = w + k * N;
#pragma unroll
      for (int n = 0; n < kSkinnyMaxN; ++n)
        if (n < N) acc[n] = fmaf(x, to_float(wk[n]), acc[n]);
    }
#pragma unroll
    for (int n = 0; n < kSkinnyMaxN; ++n) {
      if (n >= N) break;
      float v = acc[n];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) partial[warp][n] = v;
    }
    __syncthreads();
    if (threadIdx.x < unsigned(N)) {
      const int n = int(threadIdx.x);
      float v = bias ? to_float(bias[n]) : 0.f;
      for (int i = 0; i < kSkinnyWarps; ++i) v += partial[i][n];
      y[r * N + n] = from_float<TY>(has_act ? activate(v, act) : v);
    }
    __syncthreads();  // partial is rewritten for the next row
  }
}

}  // namespace

cudaError_t launch_skinny_product(const void* a, const void* w, const void* bias, void* y, int64_t rows, int64_t K,
                                  int64_t N, DType dtype, bool float_output, bool has_act, PointwiseActivation act,
                                  cudaStream_t stream, bool has_input_act, PointwiseActivation input_act) {
  if (rows <= 0) return cudaSuccess;
  if (N < 1 || N > kSkinnyMaxN || K < 0) return cudaErrorInvalidValue;
  const unsigned grid = unsigned(std::min<int64_t>(rows, 65535));  // more rows: grid-stride
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* at = static_cast<const T*>(a);
    const T* wt = static_cast<const T*>(w);
    const T* bt = static_cast<const T*>(bias);
    if (float_output)
      e = launch_dependent(skinny_product_kernel<T, float>, grid, kSkinnyThreads, 0, stream, at, wt, bt,
                           static_cast<float*>(y), rows, K, int(N), act, has_act, input_act, has_input_act);
    else
      e = launch_dependent(skinny_product_kernel<T, T>, grid, kSkinnyThreads, 0, stream, at, wt, bt, static_cast<T*>(y),
                           rows, K, int(N), act, has_act, input_act, has_input_act);
  });
  return e;
}

}  // namespace ingot::cuda
