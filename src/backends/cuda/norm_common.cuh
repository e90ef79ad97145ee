// Device pieces the normalisation family (norm_layer.cu, norm_softmax.cu, norm_gelu.cu,
// embed_layer_norm.cu, and the classifier head's kernels) shares: launch shape constants and warp/block reductions whose result
// every thread sees bit-identically (Pack, load_floats, store_floats: cuda_common.cuh).
#pragma once

#include <cmath>

#include "backends/cuda/cuda_common.cuh"

namespace ingot::cuda::norm {

constexpr int kWarpModeThreads = 128;  // 4 rows per block in warp mode
constexpr int kMaxBlockThreads = 512;  // block mode: <= 128 registers per thread
constexpr int kBlockElems = 32;        // elements per thread held in registers in block mode
constexpr int kMaxWarpVecs = 4;        // vectors per lane in warp mode

struct MaxOp {
  static __device__ float identity() { return -INFINITY; }
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  static __device__ float identity() { return 0.0f; }
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <class Op>
__device__ __forceinline__ float warp_reduce(float v) {
  // Butterfly: every lane ends with the same bits (the operations are commutative).
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op{}(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduction over the block (blockDim.x a multiple of 32); every thread gets the same result.
template <class Op>
__device__ float block_reduce(float v) {
  __shared__ float partial[32];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  v = warp_reduce<Op>(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x >> 5) ? partial[lane] : Op::identity();
  v = warp_reduce<Op>(v);
  __syncthreads();  // all reads done before the next call overwrites `partial`
  return v;
}

// v as stored in T and read back: unfused graphs materialise every Add in T.
template <class T>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<T>(v));
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce<SumOp>(v); }
__device__ __forceinline__ float block_sum(float v) { return block_reduce<SumOp>(v); }

// Sums v[r] for r < R over a CTA of W warps at once (every thread gets the same bits: the warps'
// sums are added in warp order), through red [W][R]; several rows cost one pair of barriers.
template <int R, int W>
__device__ __forceinline__ void block_sums(float (&v)[R], float* red) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
#pragma unroll
  for (int r = 0; r < R; ++r) v[r] = warp_sum(v[r]);
  __syncthreads();  // red may still be read by an earlier call
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) red[warp * R + r] = v[r];
  __syncthreads();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    v[r] = 0.f;
    for (int w = 0; w < W; ++w) v[r] += red[w * R + r];
  }
}

}  // namespace ingot::cuda::norm
