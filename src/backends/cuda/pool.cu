// Window pooling and channels-last global pooling (see pool_impl.h).
//
// NCHW window pools: one thread per output element, consecutive threads on consecutive output
// columns so the window reads of a warp overlap in L1. For ResNet's 3x3/2 MaxPool each input
// element is read by at most 4 windows, all within a few cache lines.
//
// Channels-last window pools: one thread per V contiguous channels of one output pixel (V
// elements = 16 bytes when C and the buffers' alignment allow), consecutive threads on
// consecutive channel chunks and then on the next pixel, so each window element a warp reads is
// a run of whole pixels (ResNet's C = 64 in float16: four 128-byte pixels per warp access).
//
// Channels-last global pools: a block per (image, 32 chunks of V channels), its 8 rows of
// threads each folding every 8th pixel; the rows are combined through shared memory.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/pool_impl.h"

namespace ingot::cuda {
namespace {

// Max pooling's step: a NaN wins; the first element of a window is taken as it is.
__device__ __forceinline__ void max_update(float& best, float v, bool first) {
  if (first || v > best || (isnan(v) && !isnan(best))) best = v;
}

__device__ __forceinline__ float average(float sum, int count) { return count ? sum / float(count) : 0.f; }

// Calls f(lin) for every element of the window starting at (s0, s1, s2) that lies inside the
// input, lin being its index among the in0 x in1 x in2 pixels; returns how many window
// elements lie inside the explicitly padded input (count_include_pad's divisor).
template <class I, class F>
__device__ __forceinline__ int visit_window(const PoolGeometry& g, I s0, I s1, I s2, I in0, I in1, I in2, F&& f) {
  int cnt_pad = 0;
  for (I e0 = 0; e0 < I(g.k[0]); ++e0) {
    const I c0 = s0 + e0 * I(g.dl[0]);
    const bool ok0 = c0 >= 0 && c0 < in0, pad0 = c0 >= -I(g.pb[0]) && c0 < in0 + I(g.pe[0]);
    for (I e1 = 0; e1 < I(g.k[1]); ++e1) {
      const I c1 = s1 + e1 * I(g.dl[1]);
      const bool ok1 = c1 >= 0 && c1 < in1, pad1 = c1 >= -I(g.pb[1]) && c1 < in1 + I(g.pe[1]);
      for (I e2 = 0; e2 < I(g.k[2]); ++e2) {
        const I c2 = s2 + e2 * I(g.dl[2]);
        const bool ok2 = c2 >= 0 && c2 < in2, pad2 = c2 >= -I(g.pb[2]) && c2 < in2 + I(g.pe[2]);
        cnt_pad += pad0 && pad1 && pad2;
        if (ok0 && ok1 && ok2) f((c0 * in1 + c1) * in2 + c2);
      }
    }
  }
  return cnt_pad;
}

// I is the index type: 32-bit whenever every index fits (64-bit division and modulo cost tens
// of instructions each; with them ResNet-50's b32 MaxPool took ~10x its memory time).
template <class T, class I>
__global__ void pool_kernel(const T* x, T* y, PoolGeometry g, PoolMode mode, bool count_include_pad) {
  const I in0 = I(g.in[0]), in1 = I(g.in[1]), in2 = I(g.in[2]);
  const I out0 = I(g.out[0]), out1 = I(g.out[1]), out2 = I(g.out[2]);
  const I out_plane = out0 * out1 * out2, in_plane = in0 * in1 * in2;
  const I total = I(g.n) * I(g.c) * out_plane;
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    const I pl = i / out_plane, o = i - pl * out_plane;
    const I o01 = o / out2, o2 = o - o01 * out2;
    const I o0 = o01 / out1, o1 = o01 - o0 * out1;
    const I s0 = o0 * I(g.st[0]) - I(g.pb[0]), s1 = o1 * I(g.st[1]) - I(g.pb[1]), s2 = o2 * I(g.st[2]) - I(g.pb[2]);
    const T* xp = x + pl * in_plane;
    float best = -INFINITY, acc = 0.f;
    int cnt = 0;
    const int cnt_pad = visit_window(g, s0, s1, s2, in0, in1, in2, [&](I lin) {
      const float v = to_float(xp[lin]);
      if (mode == PoolMode::kMax) max_update(best, v, cnt == 0);
      else acc += v;
      ++cnt;
    });
    y[i] = from_float<T>(mode == PoolMode::kMax ? best : average(acc, count_include_pad ? cnt_pad : cnt));
  }
}

// Thread i: channels [chunk * V, chunk * V + V) of output pixel q = i / chunks (over all
// images), written at y + i * V.
template <class T, int V, class I>
__global__ void pool_channels_last_kernel(const T* x, T* y, PoolGeometry g, PoolMode mode, bool count_include_pad) {
  const I in0 = I(g.in[0]), in1 = I(g.in[1]), in2 = I(g.in[2]);
  const I out0 = I(g.out[0]), out1 = I(g.out[1]), out2 = I(g.out[2]);
  const I c = I(g.c), chunks = c / V;
  const I out_pixels = out0 * out1 * out2, in_pixels = in0 * in1 * in2;
  const I total = I(g.n) * out_pixels * chunks;
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    const I q = i / chunks, chunk = i - q * chunks;
    const I img = q / out_pixels, o = q - img * out_pixels;
    const I o01 = o / out2, o2 = o - o01 * out2;
    const I o0 = o01 / out1, o1 = o01 - o0 * out1;
    const I s0 = o0 * I(g.st[0]) - I(g.pb[0]), s1 = o1 * I(g.st[1]) - I(g.pb[1]), s2 = o2 * I(g.st[2]) - I(g.pb[2]);
    const T* xp = x + img * in_pixels * c + chunk * V;
    float best[V], acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) best[j] = -INFINITY, acc[j] = 0.f;
    int cnt = 0;
    const int cnt_pad = visit_window(g, s0, s1, s2, in0, in1, in2, [&](I lin) {
      float v[V];
      load_floats<T, V>(xp + lin * c, v);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (mode == PoolMode::kMax) max_update(best[j], v[j], cnt == 0);
        else acc[j] += v[j];
      }
      ++cnt;
    });
    const int div = count_include_pad ? cnt_pad : cnt;
#pragma unroll
    for (int j = 0; j < V; ++j) best[j] = mode == PoolMode::kMax ? best[j] : average(acc[j], div);
    store_floats<T, V>(y + i * V, best);
  }
}

constexpr int kGlobalChunks = 32, kGlobalSlices = 8;

// A NaN sticks (as in the reductions): b > NaN is false.
__device__ __forceinline__ float max_sticky(float a, float b) { return (b > a || isnan(b)) ? b : a; }

// Block (kGlobalChunks, kGlobalSlices): thread (tx, ty) folds pixels ty, ty + 8, ... of chunk tx
// of the block's 32 chunks of one image; row 0 then combines the rows' partial results.
template <class T, int V, class I>
__global__ void global_pool_channels_last_kernel(const T* x, T* y, I n, I spatial, I c, PoolMode mode) {
  __shared__ float part[V][kGlobalSlices][kGlobalChunks];
  const I chunks = c / V, groups = (chunks + kGlobalChunks - 1) / kGlobalChunks;
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const bool is_max = mode == PoolMode::kMax;
  for (I b = I(blockIdx.x); b < n * groups; b += I(gridDim.x)) {
    const I img = b / groups, chunk = (b - img * groups) * kGlobalChunks + tx;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = is_max ? -INFINITY : 0.f;
    if (chunk < chunks) {
      const T* xp = x + img * spatial * c + chunk * V;
      for (I s = ty; s < spatial; s += kGlobalSlices) {
        float v[V];
        load_floats<T, V>(xp + s * c, v);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = is_max ? max_sticky(acc[j], v[j]) : acc[j] + v[j];
      }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) part[j][ty][tx] = acc[j];
    __syncthreads();
    if (ty == 0 && chunk < chunks) {
      for (int r = 1; r < kGlobalSlices; ++r) {
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = is_max ? max_sticky(acc[j], part[j][r][tx]) : acc[j] + part[j][r][tx];
      }
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] = is_max ? acc[j] : acc[j] / float(spatial);
      store_floats<T, V>(y + img * c + chunk * V, acc);
    }
    __syncthreads();  // part is reused by the next iteration
  }
}

// The widest access (at most 16 bytes) that divides C and keeps every pixel's channels aligned
// in both buffers.
template <class T>
int vector_width(int64_t c, const void* x, const void* y) {
  int v = 16 / int(sizeof(T));
  auto aligned = [&](const void* p) { return reinterpret_cast<uintptr_t>(p) % (uintptr_t(v) * sizeof(T)) == 0; };
  while (v > 1 && (c % v != 0 || !aligned(x) || !aligned(y))) v /= 2;
  return v;
}

// Calls f(std::integral_constant<int, V>{}) for the width v that vector_width<T> returned.
template <class T, class F>
void with_width(int v, F&& f) {
  if constexpr (sizeof(T) <= 2) {
    if (v == 8) return f(std::integral_constant<int, 8>{});
  }
  if (v == 4) return f(std::integral_constant<int, 4>{});
  if (v == 2) return f(std::integral_constant<int, 2>{});
  f(std::integral_constant<int, 1>{});
}

constexpr int64_t kInt32Limit = int64_t(1) << 31;

template <class T>
void launch_pool_nchw(PoolMode mode, bool count_include_pad, const PoolGeometry& g, const T* x, T* y,
                      cudaStream_t stream) {
  const int64_t total = g.n * g.c * g.out[0] * g.out[1] * g.out[2];
  const unsigned blocks = blocks_for(total, 256);
  const int64_t in_total = g.n * g.c * g.in[0] * g.in[1] * g.in[2];
  // 32-bit indices when the largest index, plus one grid stride of overshoot, stays below 2^31.
  if (total + int64_t(blocks) * 256 < kInt32Limit && in_total < kInt32Limit)
    pool_kernel<T, int32_t><<<blocks, 256, 0, stream>>>(x, y, g, mode, count_include_pad);
  else
    pool_kernel<T, int64_t><<<blocks, 256, 0, stream>>>(x, y, g, mode, count_include_pad);
}

template <class T>
void launch_pool_channels_last(PoolMode mode, bool count_include_pad, const PoolGeometry& g, const T* x, T* y,
                               cudaStream_t stream) {
  const int v = vector_width<T>(g.c, x, y);
  const int64_t out_total = g.n * g.c * g.out[0] * g.out[1] * g.out[2];
  const int64_t in_total = g.n * g.c * g.in[0] * g.in[1] * g.in[2];
  const int64_t threads = out_total / v;
  const unsigned blocks = blocks_for(threads, 256);
  const bool narrow =
      threads + int64_t(blocks) * 256 < kInt32Limit && out_total < kInt32Limit && in_total < kInt32Limit;
  with_width<T>(v, [&](auto w) {
    constexpr int V = decltype(w)::value;
    if (narrow)
      pool_channels_last_kernel<T, V, int32_t><<<blocks, 256, 0, stream>>>(x, y, g, mode, count_include_pad);
    else
      pool_channels_last_kernel<T, V, int64_t><<<blocks, 256, 0, stream>>>(x, y, g, mode, count_include_pad);
  });
}

}  // namespace

cudaError_t launch_pool(DType dtype, PoolMode mode, bool count_include_pad, bool channels_last, const PoolGeometry& g,
                        const void* x, void* y, cudaStream_t stream) {
  if (g.n * g.c * g.out[0] * g.out[1] * g.out[2] == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (channels_last)
      launch_pool_channels_last<T>(mode, count_include_pad, g, static_cast<const T*>(x), static_cast<T*>(y), stream);
    else
      launch_pool_nchw<T>(mode, count_include_pad, g, static_cast<const T*>(x), static_cast<T*>(y), stream);
    err = cudaGetLastError();
  });
  return err;
}

cudaError_t launch_global_pool_channels_last(DType dtype, PoolMode mode, int64_t n, int64_t spatial, int64_t c,
                                             const void* x, void* y, cudaStream_t stream) {
  if (n * spatial * c == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int v = vector_width<T>(c, x, y);
    const int64_t blocks_needed = n * ((c / v + kGlobalChunks - 1) / kGlobalChunks);
    const unsigned blocks = blocks_for(blocks_needed, 1);
    const dim3 block(kGlobalChunks, kGlobalSlices);
    const bool narrow = n * spatial * c + int64_t(blocks) < kInt32Limit;
    with_width<T>(v, [&](auto w) {
      constexpr int V = decltype(w)::value;
      const T* xt = static_cast<const T*>(x);
      T* yt = static_cast<T*>(y);
      if (narrow)
        global_pool_channels_last_kernel<T, V, int32_t>
            <<<blocks, block, 0, stream>>>(xt, yt, int32_t(n), int32_t(spatial), int32_t(c), mode);
      else
        global_pool_channels_last_kernel<T, V, int64_t><<<blocks, block, 0, stream>>>(xt, yt, n, spatial, c, mode);
    });
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
