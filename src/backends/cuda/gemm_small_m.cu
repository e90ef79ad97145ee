// Products of a few rows (M <= kSmallMaxM) against a wide weight matrix: the last layer and head
// of a classifier once gather_rows_early has cut them to the [CLS] rows (M = batch). cuBLASLt's
// kernels for M = 1..32 run on 8-24 CTAs (e.g. grid 4 x 2 for BERT's 768 x 768 at M = 1) and so
// stream the weights through a few SMs: 5-7 us each on an H100, plus a split-K reduction kernel.
// Here every 16-column slice of W is its own CTA (48 CTAs for N = 768, 192 for 3072) and rows come
// in chunks of 4 (grid y), so the weights stream through many SMs at once, each byte read from
// memory once (the other row chunks' CTAs find it in L2).
//
// A CTA: the chunk's rows of A, staged in shared memory as fp32 [4][K]; 8 warps walk K, a lane loading 16 bytes of one W row (8
// halves or 4 floats) per step, `kUnroll` steps in flight (a step waited for alone costs a full
// memory latency: K = 3072 is 24 steps); partial sums reduced over the lanes sharing
// columns (shuffles) and over the warps (shared memory); then bias, activation in fp32, and Y in
// A's dtype or float32.
#include <algorithm>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/gemm_impl.h"

namespace ingot::cuda {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kCols = 16;      // columns of W per CTA: one 32-byte sector per half-precision row
constexpr int kRowChunk = 4;   // rows of A per CTA (M = 1 wastes the other three rows' FMAs, not loads)
constexpr int kUnroll = 8;     // W loads in flight per lane

__device__ __forceinline__ float activate(float x, PointwiseActivation act, bool has_act) {
  if (!has_act) return x;
  switch (act) {
    case PointwiseActivation::kRelu: return x > 0.f ? x : 0.f;
    case PointwiseActivation::kGeluErf: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    default: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
}

template <class T>
struct Vec {  // one 16-byte load of T
  static constexpr int kSize = int(16 / sizeof(T));
  T v[kSize];
};

template <class T, class TY>
__global__ void __launch_bounds__(kThreads)
    small_m_kernel(const T* __restrict__ a, const T* __restrict__ w, const T* __restrict__ bias, TY* __restrict__ y,
                   int M, int K, int N, PointwiseActivation act, bool has_act) {
  constexpr int kVec = Vec<T>::kSize;              // columns per lane load
  constexpr int kLanesPerRow = kCols / kVec;       // 2 (halves) or 4 (floats)
  constexpr int kRowsPerStep = 32 / kLanesPerRow;  // W rows a warp loads per step
  extern __shared__ __align__(16) float smem[];
  float* xs = smem;                                 // [kRowChunk][K]
  float* red = smem + size_t(K) * kRowChunk;        // [kWarps][kRowChunk][kCols]

  const int n0 = int(blockIdx.x) * kCols, m0 = int(blockIdx.y) * kRowChunk;
  const int rows = min(kRowChunk, M - m0);
  // A's rows as fp32 in xs, row by row (rows past M are 0): 16 bytes a load when rows are
  // 16-byte aligned, coalesced, several loads in flight per thread (one load waited for per
  // element would cost a memory latency each), stored contiguously (a transposed store put every
  // lane of a warp in one bank).
  const T* a0 = a + int64_t(m0) * K;
  if (K % kVec == 0 && reinterpret_cast<uintptr_t>(a0) % 16 == 0) {
    const int per_row = K / kVec;
#pragma unroll 4
    for (int i = int(threadIdx.x); i < rows * per_row; i += kThreads) {
      const Vec<T> v = *reinterpret_cast<const Vec<T>*>(a0 + int64_t(i) * kVec);  // rows are contiguous
#pragma unroll
      for (int j = 0; j < kVec; ++j) xs[i * kVec + j] = to_float(v.v[j]);
    }
  } else {
#pragma unroll 4
    for (int i = int(threadIdx.x); i < rows * K; i += kThreads) xs[i] = to_float(a0[i]);
  }
  for (int i = rows * K + int(threadIdx.x); i < kRowChunk * K; i += kThreads) xs[i] = 0.f;
  __syncthreads();

  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int sub = lane % kLanesPerRow, row_in_step = lane / kLanesPerRow;
  const int col = n0 + sub * kVec;
  const bool active = col < N;  // N is a multiple of kVec: a lane's columns are all in or all out
  float acc[kRowChunk][kVec] = {};
  const int stride = kWarps * kRowsPerStep;
  // kUnroll rows of W requested before any is used (rows past K predicated off): K = 768 is one
  // round of six loads, not six rounds of one.
  for (int kb = warp * kRowsPerStep + row_in_step; kb < K; kb += kUnroll * stride) {
    Vec<T> wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = kb + u * stride;
      if (active && k < K) wv[u] = *reinterpret_cast<const Vec<T>*>(w + int64_t(k) * N + col);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = kb + u * stride;
      if (!active || k >= K) continue;
      float xr[kRowChunk];
#pragma unroll
      for (int r = 0; r < kRowChunk; ++r) xr[r] = xs[r * K + k];  // a warp's 16 rows: consecutive words
#pragma unroll
      for (int c = 0; c < kVec; ++c) {
        const float wf = to_float(wv[u].v[c]);
#pragma unroll
        for (int r = 0; r < kRowChunk; ++r) acc[r][c] = fmaf(xr[r], wf, acc[r][c]);
      }
    }
  }
  // Lanes with the same `sub` hold the same columns: sum over the warp's rows, then its warps.
#pragma unroll
  for (int r = 0; r < kRowChunk; ++r)
#pragma unroll
    for (int c = 0; c < kVec; ++c) {
      float v = acc[r][c];
#pragma unroll
      for (int o = kLanesPerRow; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][c] = v;
    }
  if (row_in_step == 0)
#pragma unroll
    for (int r = 0; r < kRowChunk; ++r)
#pragma unroll
      for (int c = 0; c < kVec; ++c) red[(warp * kRowChunk + r) * kCols + sub * kVec + c] = acc[r][c];
  __syncthreads();
  for (int i = int(threadIdx.x); i < kRowChunk * kCols; i += kThreads) {
    const int r = i / kCols, c = i - r * kCols, n = n0 + c;
    if (r >= rows || n >= N) continue;
    float v = bias ? to_float(bias[n]) : 0.f;
#pragma unroll
    for (int q = 0; q < kWarps; ++q) v += red[(q * kRowChunk + r) * kCols + c];
    y[int64_t(m0 + r) * N + n] = from_float<TY>(activate(v, act, has_act));
  }
}

size_t smem_bytes(int64_t K) { return size_t(K) * kRowChunk * 4 + size_t(kWarps) * kRowChunk * kCols * 4; }

template <class T, class TY>
cudaError_t launch_typed(const void* a, const void* w, const void* bias, void* y, int64_t M, int64_t K, int64_t N,
                         PointwiseActivation act, bool has_act, cudaStream_t stream) {
  // Raised once per instantiation to the largest K taken (a function attribute, fine during capture).
  static const cudaError_t raised = cudaFuncSetAttribute(small_m_kernel<T, TY>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         int(smem_bytes(kSmallMaxK)));
  if (raised != cudaSuccess) return raised;
  const dim3 grid(unsigned((N + kCols - 1) / kCols), unsigned((M + kRowChunk - 1) / kRowChunk));
  small_m_kernel<T, TY><<<grid, kThreads, smem_bytes(K), stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<TY*>(y), int(M), int(K),
      int(N), act, has_act);
  return cudaGetLastError();
}

}  // namespace

bool small_m_product_fits(int64_t M, int64_t K, int64_t N, DType dtype) {
  const int64_t vec = dtype == DType::kFloat32 ? 4 : 8;
  return M >= 1 && M <= kSmallMaxM && K >= 1 && K <= kSmallMaxK && N >= 1 && N % vec == 0 && N <= (int64_t(1) << 30) &&
         (dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16);
}

cudaError_t launch_small_m_product(const void* a, const void* w, const void* bias, void* y, int64_t M, int64_t K,
                                   int64_t N, DType dtype, bool float_output, bool has_act, PointwiseActivation act,
                                   cudaStream_t stream) {
  if (!small_m_product_fits(M, K, N, dtype) || reinterpret_cast<uintptr_t>(w) % 16 != 0) return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kFloat16:
      return float_output ? launch_typed<__half, float>(a, w, bias, y, M, K, N, act, has_act, stream)
                          : launch_typed<__half, __half>(a, w, bias, y, M, K, N, act, has_act, stream);
    case DType::kBFloat16:
      return float_output ? launch_typed<__nv_bfloat16, float>(a, w, bias, y, M, K, N, act, has_act, stream)
                          : launch_typed<__nv_bfloat16, __nv_bfloat16>(a, w, bias, y, M, K, N, act, has_act, stream);
    default: return launch_typed<float, float>(a, w, bias, y, M, K, N, act, has_act, stream);
  }
}

}  // namespace ingot::cuda
