// Layout transposes and the convolution epilogue (see conv_impl.h). All memory-bound: each
// element is read and written once; the transposes go through a shared-memory tile so both the
// reads and the writes are coalesced, except NCHW -> NHWC with few channels (an image input's
// 3), where a 32x32 tile would hold only C valid rows: there each thread moves one pixel.
#include "backends/cuda/conv_impl.h"
#include "backends/cuda/cuda_common.cuh"

namespace ingot::cuda {
namespace {

__device__ __forceinline__ float conv_act(ConvAct a, float x, float p0, float p1) {
  switch (a) {
    case ConvAct::kNone: return x;
    case ConvAct::kRelu: return x > 0.f ? x : 0.f;
    case ConvAct::kLeakyRelu: return x >= 0.f ? x : p0 * x;
    case ConvAct::kClip: return fminf(fmaxf(x, p0), p1);
    case ConvAct::kHardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case ConvAct::kHardSigmoid: return fmaxf(0.f, fminf(1.f, p0 * x + p1));
    case ConvAct::kSigmoid: return 1.f / (1.f + expf(-x));
  }
  return x;
}

// Source, destination and residual share one layout (dst may be src): one pass, no index
// decoding beyond the channel.
template <class T>
__global__ void epilogue_same_layout(const T* src, T* dst, int64_t total, int64_t k, int64_t hw, bool nhwc,
                                     const T* bias, const T* z, ConvAct act, float p0, float p1) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    float v = to_float(src[i]);
    if (bias) v += to_float(bias[nhwc ? i % k : (i / hw) % k]);
    if (z) v += to_float(z[i]);
    dst[i] = from_float<T>(conv_act(act, v, p0, p1));
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;

// [batch][A][B] -> [batch][B][A] through a 32x33 shared tile (the padding column keeps the
// transposed reads free of bank conflicts), with the epilogue applied on the way. The channel
// of an element is its A index when `channel_is_a`, else its B index. The residual is read
// with the source's layout (z_src) or the destination's (z_dst). Tiles are visited with a
// grid-stride loop so no grid dimension limit applies.
template <class T>
__global__ void transpose_epilogue(const T* src, T* dst, int64_t batch, int64_t A, int64_t B, bool channel_is_a,
                                   const T* bias, const T* z_src, const T* z_dst, ConvAct act, float p0, float p1) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t ta = (A + kTile - 1) / kTile, tb = (B + kTile - 1) / kTile;
  const int64_t tiles = batch * ta * tb;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t n = t / (ta * tb), rem = t % (ta * tb);
    const int64_t a0 = (rem / tb) * kTile, b0 = (rem % tb) * kTile;
    for (int i = ty; i < kTile; i += kTileRows) {
      const int64_t a = a0 + i, b = b0 + tx;
      if (a < A && b < B) {
        const int64_t off = (n * A + a) * B + b;
        float v = to_float(src[off]);
        if (z_src) v += to_float(z_src[off]);
        tile[i][tx] = v;
      }
    }
    __syncthreads();
    for (int i = ty; i < kTile; i += kTileRows) {
      const int64_t b = b0 + i, a = a0 + tx;
      if (a < A && b < B) {
        const int64_t off = (n * B + b) * A + a;
        float v = tile[tx][i];
        if (bias) v += to_float(bias[channel_is_a ? a : b]);
        if (z_dst) v += to_float(z_dst[off]);
        dst[off] = from_float<T>(conv_act(act, v, p0, p1));
      }
    }
    __syncthreads();  // the tile is reused by the next iteration
  }
}

// The A (<= kSmallA) of transpose_small_a.
constexpr int kSmallA = 8;

// transpose_epilogue's job (channel = A index) for A <= kSmallA: thread i moves element b of
// batch n, reading its A values from the A planes (consecutive threads read consecutive b, so
// each plane's reads are coalesced) and writing them contiguously at dst + i * A. I is the index
// type (32-bit where every index fits: the index math is most of the work here).
template <class T, class I>
__global__ void transpose_small_a(const T* src, T* dst, I batch, int A, I B, const T* bias, const T* z_src,
                                  const T* z_dst, ConvAct act, float p0, float p1) {
  const I total = batch * B;
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    const I n = i / B, b = i - n * B;
    const I from = n * I(A) * B + b;
    float v[kSmallA];
    // All loads first: the stores below may alias them as far as the compiler knows.
#pragma unroll
    for (int a = 0; a < kSmallA; ++a) {
      if (a >= A) break;
      v[a] = to_float(src[from + I(a) * B]);
      if (z_src) v[a] += to_float(z_src[from + I(a) * B]);
    }
#pragma unroll
    for (int a = 0; a < kSmallA; ++a) {
      if (a >= A) break;
      float r = v[a];
      if (bias) r += to_float(bias[a]);
      if (z_dst) r += to_float(z_dst[i * I(A) + I(a)]);
      dst[i * I(A) + I(a)] = from_float<T>(conv_act(act, r, p0, p1));
    }
  }
}

// [batch][A][B] -> [batch][B][A] with the channel on A, as transpose_small_a (A <= kSmallA) or
// through the tiles.
template <class T>
void launch_transpose_channel_a(const T* src, T* dst, int64_t batch, int64_t A, int64_t B, const T* bias,
                                const T* z_src, const T* z_dst, ConvAct act, float p0, float p1, cudaStream_t stream) {
  if (A <= kSmallA) {
    constexpr int kThreads = 256;
    const int64_t total = batch * A * B;
    const unsigned blocks = blocks_for(batch * B, kThreads);
    if (total + int64_t(blocks) * kThreads < (int64_t(1) << 31))
      transpose_small_a<T, int32_t><<<blocks, kThreads, 0, stream>>>(src, dst, int32_t(batch), int(A), int32_t(B),
                                                                     bias, z_src, z_dst, act, p0, p1);
    else
      transpose_small_a<T, int64_t><<<blocks, kThreads, 0, stream>>>(src, dst, batch, int(A), B, bias, z_src, z_dst,
                                                                     act, p0, p1);
    return;
  }
  const int64_t tiles = batch * ((A + kTile - 1) / kTile) * ((B + kTile - 1) / kTile);
  transpose_epilogue<T><<<unsigned(tiles < (1 << 20) ? tiles : (1 << 20)), dim3(kTile, kTileRows), 0, stream>>>(
      src, dst, batch, A, B, true, bias, z_src, z_dst, act, p0, p1);
}

// Any layouts and a residual broadcast over its dims of 1: every output element decodes its
// logical (n, k, y, x). Reached only for shapes the fused residual was not planned for.
template <class T>
__global__ void epilogue_generic(const T* src, bool src_nhwc, T* dst, bool dst_nhwc, int64_t n, int64_t k, int64_t h,
                                 int64_t w, const T* bias, const T* z, bool z_nhwc, int64_t zn, int64_t zk, int64_t zh,
                                 int64_t zw, ConvAct act, float p0, float p1) {
  const int64_t hw = h * w, total = n * k * hw;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t in, ik, is;
    if (dst_nhwc) {
      ik = i % k;
      is = (i / k) % hw;
      in = i / (k * hw);
    } else {
      is = i % hw;
      ik = (i / hw) % k;
      in = i / (k * hw);
    }
    const int64_t src_off = src_nhwc ? (in * hw + is) * k + ik : (in * k + ik) * hw + is;
    float v = to_float(src[src_off]);
    if (bias) v += to_float(bias[ik]);
    if (z) {
      const int64_t iy = is / w, ix = is % w;
      const int64_t bn = zn == 1 ? 0 : in, bk = zk == 1 ? 0 : ik, by = zh == 1 ? 0 : iy, bx = zw == 1 ? 0 : ix;
      const int64_t zoff = z_nhwc ? ((bn * zh + by) * zw + bx) * zk + bk : ((bn * zk + bk) * zh + by) * zw + bx;
      v += to_float(z[zoff]);
    }
    dst[i] = from_float<T>(conv_act(act, v, p0, p1));
  }
}

template <class T>
cudaError_t epilogue_typed(const void* src_v, bool src_nhwc, void* dst_v, bool dst_nhwc, int64_t n, int64_t k,
                           int64_t h, int64_t w, const ConvEpilogue& e, cudaStream_t stream) {
  const T* src = static_cast<const T*>(src_v);
  T* dst = static_cast<T*>(dst_v);
  const T* bias = static_cast<const T*>(e.bias);
  const T* z = static_cast<const T*>(e.z);
  const int64_t hw = h * w, total = n * k * hw;
  if (total == 0) return cudaSuccess;
  const bool z_full = z && e.zn == n && e.zk == k && e.zh == h && e.zw == w;
  constexpr int kThreads = 256;
  if (src_nhwc == dst_nhwc && (!z || (z_full && e.z_nhwc == dst_nhwc))) {
    epilogue_same_layout<T><<<blocks_for(total, kThreads), kThreads, 0, stream>>>(src, dst, total, k, hw, dst_nhwc,
                                                                                  bias, z, e.act, e.p0, e.p1);
  } else if (src_nhwc != dst_nhwc && (!z || z_full)) {
    const T* z_src = z && e.z_nhwc == src_nhwc ? z : nullptr;
    const T* z_dst = z && e.z_nhwc == dst_nhwc ? z : nullptr;
    if (!src_nhwc) {
      // [n][k][hw] -> [n][hw][k]: the channel is A.
      launch_transpose_channel_a(src, dst, n, k, hw, bias, z_src, z_dst, e.act, e.p0, e.p1, stream);
    } else {
      // [n][hw][k] -> [n][k][hw]: the channel is B.
      const int64_t tiles = n * ((hw + kTile - 1) / kTile) * ((k + kTile - 1) / kTile);
      transpose_epilogue<T><<<unsigned(tiles < (1 << 20) ? tiles : (1 << 20)), dim3(kTile, kTileRows), 0, stream>>>(
          src, dst, n, hw, k, false, bias, z_src, z_dst, e.act, e.p0, e.p1);
    }
  } else {
    epilogue_generic<T><<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
        src, src_nhwc, dst, dst_nhwc, n, k, h, w, bias, z, e.z_nhwc, e.zn, e.zk, e.zh, e.zw, e.act, e.p0, e.p1);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_conv_epilogue(DType dtype, const void* src, bool src_nhwc, void* dst, bool dst_nhwc, int64_t n,
                                 int64_t k, int64_t h, int64_t w, const ConvEpilogue& e, cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    err = epilogue_typed<decltype(tag)>(src, src_nhwc, dst, dst_nhwc, n, k, h, w, e, stream);
  });
  return err;
}

cudaError_t launch_transpose_planes(DType dtype, const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
                                    cudaStream_t stream) {
  if (batch * rows * cols == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_transpose_channel_a<T>(static_cast<const T*>(src), static_cast<T*>(dst), batch, rows, cols, nullptr,
                                  nullptr, nullptr, ConvAct::kNone, 0.f, 0.f, stream);
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
