// Reduction and BatchNormalization kernels (see reduce_impl.h).
//
// Rows (innermost run reduced): a warp per output for short rows (global average pooling of a
// 7x7 map: 49 elements), a block per output (or per slice of one, combined by a second kernel)
// for long ones. Columns (innermost run kept): a thread per output, consecutive threads on
// consecutive columns, so every step of the loop over the reduced runs is one coalesced read.
// All accumulate in float32 registers; the op is a runtime switch (uniform per launch), which
// costs nothing next to the memory traffic and keeps the number of instantiations small.
#include <cmath>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/reduce_impl.h"

namespace ingot::cuda {
namespace {

__device__ __forceinline__ float red_init(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return -INFINITY;
    case ReduceOp::kMin: return INFINITY;
    case ReduceOp::kProd: return 1.f;
    default: return 0.f;
  }
}

// A NaN sticks (as on the CPU): x > NaN and x < NaN are false.
__device__ __forceinline__ void red_update(ReduceOp op, float& a, float x) {
  switch (op) {
    case ReduceOp::kMax: a = (x > a || x != x) ? x : a; break;
    case ReduceOp::kMin: a = (x < a || x != x) ? x : a; break;
    case ReduceOp::kProd: a *= x; break;
    case ReduceOp::kL1: a += fabsf(x); break;
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare: a += x * x; break;
    default: a += x; break;
  }
}

__device__ __forceinline__ float red_combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::kMax: return (a != a || b != b) ? (a != a ? a : b) : fmaxf(a, b);
    case ReduceOp::kMin: return (a != a || b != b) ? (a != a ? a : b) : fminf(a, b);
    case ReduceOp::kProd: return a * b;
    default: return a + b;
  }
}

__device__ __forceinline__ float red_finish(ReduceOp op, float a, int64_t count) {
  switch (op) {
    case ReduceOp::kMean: return a / float(count);
    case ReduceOp::kL2: return sqrtf(a);
    case ReduceOp::kLogSum: return logf(a);
    default: return a;
  }
}

__device__ __forceinline__ float warp_combine(ReduceOp op, float v) {
  for (int m = 16; m > 0; m >>= 1) v = red_combine(op, v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

// Input offset of the kept-outer index `o` (kept runs only).
__device__ __forceinline__ int64_t kept_base(const ReduceGeometry& g, int64_t o) {
  int64_t off = 0;
  for (int k = g.nkept - 1; k >= 0; --k) {
    off += (o % g.kept_dims[k]) * g.kept_strides[k];
    o /= g.kept_dims[k];
  }
  return off;
}

// Input offset of reduced-run index `r` (reduced runs other than the innermost).
__device__ __forceinline__ int64_t red_offset(const ReduceGeometry& g, int64_t r) {
  int64_t off = 0;
  for (int k = g.nred - 1; k >= 0; --k) {
    off += (r % g.red_dims[k]) * g.red_strides[k];
    r /= g.red_dims[k];
  }
  return off;
}

// Offset of element t (< count) of a reduced row that starts at `base`.
__device__ __forceinline__ int64_t row_offset(const ReduceGeometry& g, int64_t base, int64_t t) {
  if (g.nred == 0) return base + t;  // one contiguous run: the global-pooling case
  const int64_t r = t / g.inner;
  return base + red_offset(g, r) + (t - r * g.inner);
}

template <class T>
__global__ void reduce_rows_warp(const T* x, T* y, ReduceGeometry g, ReduceOp op) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t o = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; o < g.num_out; o += warps) {
    const int64_t base = kept_base(g, o);
    float acc = red_init(op);
    for (int64_t t = lane; t < g.count; t += 32) red_update(op, acc, to_float(x[row_offset(g, base, t)]));
    acc = warp_combine(op, acc);
    if (lane == 0) y[o] = from_float<T>(red_finish(op, acc, g.count));
  }
}

// Block b reduces slice (b % splits) of output (b / splits): the whole row when splits is 1
// (written to y), else a partial accumulator written to partial[b].
template <class T>
__global__ void reduce_rows_block(const T* x, T* y, float* partial, ReduceGeometry g, ReduceOp op, int64_t splits) {
  __shared__ float warp_acc[32];
  const int64_t chunk = (g.count + splits - 1) / splits;
  for (int64_t b = blockIdx.x; b < g.num_out * splits; b += gridDim.x) {
    const int64_t o = b / splits, s = b % splits;
    const int64_t t0 = s * chunk, t1 = t0 + chunk < g.count ? t0 + chunk : g.count;
    const int64_t base = kept_base(g, o);
    float acc = red_init(op);
    for (int64_t t = t0 + threadIdx.x; t < t1; t += blockDim.x) red_update(op, acc, to_float(x[row_offset(g, base, t)]));
    acc = warp_combine(op, acc);
    const int warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    if ((threadIdx.x & 31) == 0) warp_acc[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = threadIdx.x < nwarps ? warp_acc[threadIdx.x] : red_init(op);
      acc = warp_combine(op, acc);
      if (threadIdx.x == 0) {
        if (splits == 1) y[o] = from_float<T>(red_finish(op, acc, g.count));
        else partial[b] = acc;
      }
    }
    __syncthreads();  // warp_acc is reused by the next iteration
  }
}

template <class T>
__global__ void reduce_combine_splits(const float* partial, T* y, ReduceGeometry g, ReduceOp op, int64_t splits) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < g.num_out; o += int64_t(gridDim.x) * blockDim.x) {
    float acc = red_init(op);
    for (int64_t s = 0; s < splits; ++s) acc = red_combine(op, acc, partial[o * splits + s]);
    y[o] = from_float<T>(red_finish(op, acc, g.count));
  }
}

template <class T>
__global__ void reduce_columns(const T* x, T* y, ReduceGeometry g, ReduceOp op) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < g.num_out; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t outer = o / g.inner, j = o - outer * g.inner;
    const int64_t base = kept_base(g, outer) + j;
    float acc = red_init(op);
    if (g.nred == 1) {
      const int64_t stride = g.red_strides[0];
      for (int64_t r = 0; r < g.count; ++r) red_update(op, acc, to_float(x[base + r * stride]));
    } else {
      for (int64_t r = 0; r < g.count; ++r) red_update(op, acc, to_float(x[base + red_offset(g, r)]));
    }
    y[o] = from_float<T>(red_finish(op, acc, g.count));
  }
}

template <class T>
cudaError_t reduce_typed(ReduceOp op, const ReduceGeometry& g, const T* x, T* y, float* ws, cudaStream_t stream) {
  if (g.num_out == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  if (!g.inner_reduced) {
    reduce_columns<T><<<blocks_for(g.num_out, kThreads), kThreads, 0, stream>>>(x, y, g, op);
    return cudaGetLastError();
  }
  const int64_t splits = reduce_splits(g);
  if (splits == 1 && g.count <= 1024) {
    reduce_rows_warp<T><<<blocks_for(g.num_out, kThreads / 32), kThreads, 0, stream>>>(x, y, g, op);
    return cudaGetLastError();
  }
  reduce_rows_block<T><<<blocks_for(g.num_out * splits, 1), kThreads, 0, stream>>>(x, y, ws, g, op, splits);
  if (splits > 1) reduce_combine_splits<T><<<blocks_for(g.num_out, kThreads), kThreads, 0, stream>>>(ws, y, g, op, splits);
  return cudaGetLastError();
}

template <class T>
__global__ void batch_norm_fold(const T* scale, const T* bias, const T* mean, const T* var, float eps, int64_t c,
                                float* a, float* b) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < c; i += int64_t(gridDim.x) * blockDim.x) {
    const double inv = 1.0 / sqrt(double(to_float(var[i])) + double(eps));
    const double ad = double(to_float(scale[i])) * inv;
    a[i] = float(ad);
    b[i] = float(double(to_float(bias[i])) - double(to_float(mean[i])) * ad);
  }
}

template <class T>
__global__ void channel_affine(const T* x, T* y, const float* a, const float* b, int64_t total, int64_t c,
                               int64_t spatial) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / spatial) % c;
    y[i] = from_float<T>(to_float(x[i]) * a[ch] + b[ch]);
  }
}

}  // namespace

cudaError_t launch_reduce(DType dtype, ReduceOp op, const ReduceGeometry& g, const void* x, void* y, void* workspace,
                          cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    err = reduce_typed<T>(op, g, static_cast<const T*>(x), static_cast<T*>(y), static_cast<float*>(workspace), stream);
  });
  return err;
}

cudaError_t launch_batch_norm_fold(DType dtype, const void* scale, const void* bias, const void* mean,
                                   const void* var, float eps, int64_t c, float* a, float* b, cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    batch_norm_fold<T><<<blocks_for(c, 128), 128, 0, stream>>>(static_cast<const T*>(scale), static_cast<const T*>(bias),
                                                               static_cast<const T*>(mean), static_cast<const T*>(var),
                                                               eps, c, a, b);
    err = cudaGetLastError();
  });
  return err;
}

cudaError_t launch_channel_affine(DType dtype, const void* x, void* y, const float* a, const float* b, int64_t n,
                                  int64_t c, int64_t spatial, cudaStream_t stream) {
  const int64_t total = n * c * spatial;
  if (total == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    channel_affine<T><<<blocks_for(total, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), a, b,
                                                                  total, c, spatial);
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
