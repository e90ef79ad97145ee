// Softmax and LogSoftmax over n of a tensor viewed as [outer, n, inner], computed as the CPU
// kernel does: m = max, e = exp(x - m), softmax = e · (1 / Σe), log-softmax = x - (m + log Σe).
//
// inner == 1 (the reduced axis is contiguous): rows of up to 16384 elements (8192 when loaded
// element by element) are read once into registers (one warp per row up to 128 vectors of 16
// bytes, else one block per row) and written once; longer rows take three sweeps over memory. inner > 1: one thread per (outer, inner) column,
// neighbouring threads reading neighbouring columns so every sweep over n is coalesced.
#include <algorithm>
#include <cmath>

#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/norm_impl.h"

namespace ingot::cuda {
namespace {

using namespace norm;

template <class Op, bool kWarp>
__device__ __forceinline__ float row_reduce(float v) {
  if constexpr (kWarp) return warp_reduce<Op>(v);
  else return block_reduce<Op>(v);
}

// Rows held in registers: thread t of a row owns vectors t, t + tpr, ..., t + (N-1)·tpr.
template <class T, int V, int N, bool kLog, bool kWarp>
__global__ void __launch_bounds__(kWarp ? kWarpModeThreads : kMaxBlockThreads)
    softmax_rows_cached(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  const int tpr = kWarp ? 32 : int(blockDim.x);
  const int t = kWarp ? int(threadIdx.x & 31) : int(threadIdx.x);
  const int rows_per_block = kWarp ? int(blockDim.x >> 5) : 1;
  const int64_t first = int64_t(blockIdx.x) * rows_per_block + (kWarp ? int(threadIdx.x >> 5) : 0);
  const int64_t step = int64_t(gridDim.x) * rows_per_block;
  const int nv = int(n / V);
  for (int64_t r = first; r < rows; r += step) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float v[N][V];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int c = i * tpr + t;
      if (c < nv) {
        load_floats<T, V>(xr + int64_t(c) * V, v[i]);
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, v[i][j]);
      }
    }
    m = row_reduce<MaxOp, kWarp>(m);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (i * tpr + t < nv) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float e = expf(v[i][j] - m);
          s += e;
          if constexpr (!kLog) v[i][j] = e;
        }
      }
    }
    s = row_reduce<SumOp, kWarp>(s);
    // Softmax: scale by 1/Σe; log-softmax: shift by log Σe + m.
    const float scale = kLog ? 1.0f : 1.0f / s;
    const float shift = kLog ? m + logf(s) : 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int c = i * tpr + t;
      if (c < nv) {
        float o[V];
#pragma unroll
        for (int j = 0; j < V; ++j) o[j] = kLog ? v[i][j] - shift : v[i][j] * scale;
        store_floats<T, V>(yr + int64_t(c) * V, o);
      }
    }
  }
}

// Rows too long for registers: one block per row, three sweeps over memory.
template <class T, int V, bool kLog>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_rows_long(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  const int64_t nv = n / V;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V];
      load_floats<T, V>(xr + c * V, v);
#pragma unroll
      for (int j = 0; j < V; ++j) m = fmaxf(m, v[j]);
    }
    m = block_reduce<MaxOp>(m);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V];
      load_floats<T, V>(xr + c * V, v);
#pragma unroll
      for (int j = 0; j < V; ++j) s += expf(v[j] - m);
    }
    s = block_reduce<SumOp>(s);
    const float scale = 1.0f / s, shift = m + logf(s);
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V];
      load_floats<T, V>(xr + c * V, v);
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = kLog ? v[j] - shift : expf(v[j] - m) * scale;
      store_floats<T, V>(yr + c * V, v);
    }
  }
}

// inner > 1: thread per column (o, j); the column's n elements are inner apart.
template <class T, bool kLog>
__global__ void softmax_strided(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n,
                                int64_t inner) {
  const int64_t columns = outer * inner;
  for (int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; col < columns;
       col += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = col / inner, j = col % inner;
    const int64_t base = o * n * inner + j;
    float m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = fmaxf(m, to_float(x[base + i * inner]));
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += expf(to_float(x[base + i * inner]) - m);
    const float scale = 1.0f / s, shift = m + logf(s);
    for (int64_t i = 0; i < n; ++i) {
      const float v = to_float(x[base + i * inner]);
      y[base + i * inner] = from_float<T>(kLog ? v - shift : expf(v - m) * scale);
    }
  }
}

unsigned grid_size(int64_t work_items, int sm_count, int per_sm) {
  const int64_t cap = sm_count > 0 ? int64_t(sm_count) * per_sm : 65535;
  return unsigned(std::max<int64_t>(1, std::min(work_items, cap)));
}

template <class T, int V, bool kLog>
cudaError_t launch_rows(const T* x, T* y, int64_t rows, int64_t n, int sm_count, cudaStream_t stream) {
  const int64_t nv = n / V;
  if (nv <= 32 * kMaxWarpVecs) {
    const int rows_per_block = kWarpModeThreads / 32;
    const unsigned blocks = grid_size((rows + rows_per_block - 1) / rows_per_block, sm_count, 16);
    if (nv <= 32) {
      softmax_rows_cached<T, V, 1, kLog, true><<<blocks, kWarpModeThreads, 0, stream>>>(x, y, rows, n);
    } else if (nv <= 64) {
      softmax_rows_cached<T, V, 2, kLog, true><<<blocks, kWarpModeThreads, 0, stream>>>(x, y, rows, n);
    } else {
      softmax_rows_cached<T, V, kMaxWarpVecs, kLog, true><<<blocks, kWarpModeThreads, 0, stream>>>(x, y, rows, n);
    }
    return cudaGetLastError();
  }
  // Scalar loads need an address register each: hold fewer of them.
  constexpr int kBlockVecs = V == 1 ? kBlockElems / 2 : kBlockElems / V;
  if (nv <= int64_t(kMaxBlockThreads) * kBlockVecs) {
    int64_t threads = (nv + kBlockVecs - 1) / kBlockVecs;
    threads = std::min<int64_t>(kMaxBlockThreads, std::max<int64_t>(128, (threads + 31) / 32 * 32));
    const unsigned blocks = grid_size(rows, sm_count, int(2048 / threads));
    softmax_rows_cached<T, V, kBlockVecs, kLog, false><<<blocks, unsigned(threads), 0, stream>>>(x, y, rows, n);
    return cudaGetLastError();
  }
  softmax_rows_long<T, V, kLog><<<grid_size(rows, sm_count, 4), kMaxBlockThreads, 0, stream>>>(x, y, rows, n);
  return cudaGetLastError();
}

template <class T, bool kLog>
cudaError_t launch_typed(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int sm_count,
                         cudaStream_t stream) {
  if (inner > 1) {
    softmax_strided<T, kLog><<<blocks_for(outer * inner, 256), 256, 0, stream>>>(x, y, outer, n, inner);
    return cudaGetLastError();
  }
  constexpr int V = 16 / sizeof(T);
  const bool vec = n % V == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  return vec ? launch_rows<T, V, kLog>(x, y, outer, n, sm_count, stream)
             : launch_rows<T, 1, kLog>(x, y, outer, n, sm_count, stream);
}

}  // namespace

cudaError_t launch_softmax(const void* x, void* y, DType dtype, int64_t outer, int64_t n, int64_t inner, bool log,
                           int sm_count, cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    e = log ? launch_typed<T, true>(xt, yt, outer, n, inner, sm_count, stream)
            : launch_typed<T, false>(xt, yt, outer, n, inner, sm_count, stream);
  });
  return e;
}

}  // namespace ingot::cuda
