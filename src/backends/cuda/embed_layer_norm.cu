// ingot.EmbedLayerNorm on the GPU (see embed_layer_norm_impl.h), one warp per row, two kernels:
//   embed_ln_registers<T, C, kParamsFirst>  16-bit tables with rows of at most 32·8·C elements, a multiple of
//                             8 (BERT's 768: C = 3): each lane holds C chunks of 8 elements of s
//                             in registers, loaded and stored 16 bytes at a time, so the row is
//                             read once per table and Y written once.
//   embed_layer_norm_kernel   any row: s is written into Y and the statistics passes read it
//                             back from L1/L2.
// Either way s is rounded to the tables' dtype after every addition, as the unfused graph does.
#include <type_traits>

#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/embed_layer_norm_impl.h"

namespace ingot::cuda {
namespace {

using norm::round_to;
using norm::warp_sum;

// Four warps (rows) per block: BERT's 128-token batch-1 input is then 32 blocks, not 16.
constexpr int kWarpsPerBlock = 4;

// Row r's coordinates in the broadcast ids shape. 32-bit division when the rows fit: 64-bit
// division is a long instruction sequence, and at batch 1 it sits before the first load.
struct RowCoords {
  int64_t at[kEmbedMaxRank];
};

__device__ __forceinline__ RowCoords row_coords(const EmbedArgs& a, int64_t r) {
  RowCoords rc;
  if (a.rows <= INT32_MAX) {
    uint32_t rest = uint32_t(r);
#pragma unroll
    for (int d = kEmbedMaxRank - 1; d >= 0; --d) {
      const uint32_t n = uint32_t(a.dims[d]);
      rc.at[d] = rest % n;
      rest /= n;
    }
  } else {
    int64_t rest = r;
#pragma unroll
    for (int d = kEmbedMaxRank - 1; d >= 0; --d) {
      rc.at[d] = rest % a.dims[d];
      rest /= a.dims[d];
    }
  }
  return rc;
}

// The table row of lookup l at these coordinates, or null when the id is outside the table (the
// row then reads as zeros: a kernel cannot report the id, the CPU path does).
template <class T> __device__ __forceinline__ const T* lookup_row(const EmbedArgs& a, int l, const RowCoords& rc) {
  int64_t off = 0;
#pragma unroll
  for (int d = 0; d < kEmbedMaxRank; ++d) off += rc.at[d] * a.id_stride[l][d];
  int64_t id = a.ids64[l] ? static_cast<const int64_t*>(a.ids[l])[off] : static_cast<const int32_t*>(a.ids[l])[off];
  if (id < 0) id += a.rows_in_table[l];
  return id >= 0 && id < a.rows_in_table[l] ? static_cast<const T*>(a.table[l]) + id * a.hidden : nullptr;
}

template <class T>
__global__ void embed_layer_norm_kernel(EmbedArgs a) {
  wait_prior_grids();
  allow_dependent_grids();
  issue_l2_prefetch(a.prefetch);
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < a.rows; r += warps) {
    const RowCoords rc = row_coords(a, r);
    const T* src[kEmbedMaxLookups];
    for (int l = 0; l < kEmbedMaxLookups; ++l) src[l] = l < a.lookups ? lookup_row<T>(a, l, rc) : nullptr;
    T* yr = static_cast<T*>(a.y) + r * a.hidden;
    float total = 0.f;
    for (int64_t k = lane; k < a.hidden; k += 32) {
      auto term = [&](int l) { return src[l] ? to_float(src[l][k]) : 0.f; };
      float x = term(0), skip = term(a.x_terms);
      for (int l = 1; l < a.x_terms; ++l) x = round_to<T>(x + term(l));
      for (int l = a.x_terms + 1; l < a.lookups; ++l) skip = round_to<T>(skip + term(l));
      const T s = from_float<T>(x + skip);
      yr[k] = s;
      if (a.sum) static_cast<T*>(a.sum)[r * a.hidden + k] = s;
      total += to_float(s);
    }
    const float mean = warp_sum(total) / float(a.hidden);
    float sq = 0.f;
    for (int64_t k = lane; k < a.hidden; k += 32) {
      const float d = to_float(yr[k]) - mean;
      sq += d * d;
    }
    const float inv = rsqrtf(warp_sum(sq) / float(a.hidden) + a.epsilon);
    for (int64_t k = lane; k < a.hidden; k += 32) {
      const float v = (to_float(yr[k]) - mean) * inv * a.gamma[k] + (a.beta ? a.beta[k] : 0.f);
      yr[k] = from_float<T>(v);
    }
  }
}

template <class T2> __device__ __forceinline__ T2 zero2();
template <> __device__ __forceinline__ __half2 zero2<__half2>() { return __float2half2_rn(0.f); }
template <> __device__ __forceinline__ __nv_bfloat162 zero2<__nv_bfloat162>() { return __float2bfloat162_rn(0.f); }
__device__ __forceinline__ float2 to_float2(__half2 v) { return __half22float2(v); }
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }

// Lane's gamma and beta for chunk c (8 floats each from element k), zeros past the row.
__device__ __forceinline__ void load_chunk_params(const EmbedArgs& a, int64_t k, float4 (&g)[2], float4 (&b)[2]) {
  const bool in = k < a.hidden;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  g[0] = in ? __ldg(reinterpret_cast<const float4*>(a.gamma + k)) : zero;
  g[1] = in ? __ldg(reinterpret_cast<const float4*>(a.gamma + k + 4)) : zero;
  b[0] = in && a.beta ? __ldg(reinterpret_cast<const float4*>(a.beta + k)) : zero;
  b[1] = in && a.beta ? __ldg(reinterpret_cast<const float4*>(a.beta + k + 4)) : zero;
}

// kParamsFirst: gamma and beta are loaded before the ids. At batch 1 this kernel is a chain of
// memory latencies (id -> table row -> statistics), so every load is issued before any is used:
// gamma and beta first (they need no id), then the ids, then every row chunk of every table.
// With many rows the 48 registers they hold cost occupancy instead: they are read after the
// statistics (from L1/L2: every warp reads the same ones).
// Loops over lookups are unrolled to the maximum with guards, so the arrays stay in registers
// (an index known only at run time would put them in local memory and serialise the loads).
template <class T, int C, bool kParamsFirst>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) embed_ln_registers(const EmbedArgs a) {
  const int lane = threadIdx.x & 31;
  float4 g[kParamsFirst ? C : 1][2], b[kParamsFirst ? C : 1][2];
  if constexpr (kParamsFirst)  // constant: before the wait
#pragma unroll
    for (int c = 0; c < C; ++c) load_chunk_params(a, (int64_t(c) * 32 + lane) * 8, g[c], b[c]);
  wait_prior_grids();
  allow_dependent_grids();
  issue_l2_prefetch(a.prefetch);
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (r >= a.rows) return;
  const RowCoords rc = row_coords(a, r);
  const T* src[kEmbedMaxLookups];
#pragma unroll
  for (int l = 0; l < kEmbedMaxLookups; ++l) src[l] = l < a.lookups ? lookup_row<T>(a, l, rc) : nullptr;
  uint4 raw[kEmbedMaxLookups][C];
#pragma unroll
  for (int l = 0; l < kEmbedMaxLookups; ++l)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int64_t k = (int64_t(c) * 32 + lane) * 8;
      raw[l][c] = src[l] && k < a.hidden ? __ldg(reinterpret_cast<const uint4*>(src[l] + k)) : make_uint4(0, 0, 0, 0);
    }

  // The sums chunk by chunk in T's own two-element arithmetic: an add of two T values rounds as
  // their float sum rounded to T (the unfused graph's Adds) in one instruction per pair, and
  // which lookups are x's and which skip's is warp-uniform, so it is decided per chunk, not per
  // element. (Element by element through float, with those decisions inside, the kernel was
  // bound by issuing ~1150 instructions a row: 9.6 us for DistilBERT's 4096 rows on an H100.)
  using T2 = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
  float s[C][8];
  float total = 0.f;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    T2 x[4], skip[4];
    const T2* first = reinterpret_cast<const T2*>(&raw[0][c]);
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = first[j], skip[j] = zero2<T2>();  // x + 0 when every lookup is x's
#pragma unroll
    for (int l = 1; l < kEmbedMaxLookups; ++l) {
      if (l >= a.lookups) break;
      const T2* t = reinterpret_cast<const T2*>(&raw[l][c]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (l < a.x_terms) x[j] = __hadd2(x[j], t[j]);
        else if (l == a.x_terms) skip[j] = t[j];
        else skip[j] = __hadd2(skip[j], t[j]);
      }
    }
    T2 sum[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      sum[j] = __hadd2(x[j], skip[j]);  // zeros past the row (raw is zero there)
      const float2 f = to_float2(sum[j]);
      s[c][2 * j] = f.x, s[c][2 * j + 1] = f.y;
      total += f.x;
      total += f.y;
    }
    const int64_t k = (int64_t(c) * 32 + lane) * 8;
    if (a.sum && k < a.hidden)
      *reinterpret_cast<uint4*>(static_cast<T*>(a.sum) + r * a.hidden + k) = *reinterpret_cast<const uint4*>(sum);
  }
  const float mean = warp_sum(total) / float(a.hidden);
  float sq = 0.f;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if ((int64_t(c) * 32 + lane) * 8 >= a.hidden) continue;
#pragma unroll
    for (int e = 0; e < 8; ++e) sq += (s[c][e] - mean) * (s[c][e] - mean);
  }
  const float inv = rsqrtf(warp_sum(sq) / float(a.hidden) + a.epsilon);
  T* yr = static_cast<T*>(a.y) + r * a.hidden;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int64_t k = (int64_t(c) * 32 + lane) * 8;
    if (k >= a.hidden) continue;
    float4 gc[2], bc[2];
    if constexpr (kParamsFirst) gc[0] = g[c][0], gc[1] = g[c][1], bc[0] = b[c][0], bc[1] = b[c][1];
    else load_chunk_params(a, k, gc, bc);
    const float gm[8] = {gc[0].x, gc[0].y, gc[0].z, gc[0].w, gc[1].x, gc[1].y, gc[1].z, gc[1].w};
    const float bt[8] = {bc[0].x, bc[0].y, bc[0].z, bc[0].w, bc[1].x, bc[1].y, bc[1].z, bc[1].w};
    T out[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = from_float<T>((s[c][e] - mean) * inv * gm[e] + bt[e]);
    *reinterpret_cast<uint4*>(yr + k) = *reinterpret_cast<const uint4*>(out);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Whether embed_ln_registers<T, C> serves `a`: rows a multiple of 8 elements (16 bytes), every
// table, Y, the sum, gamma and beta 16-byte aligned.
bool registers_fit(const EmbedArgs& a, int chunks) {
  if (a.hidden % 8 != 0 || a.hidden > int64_t(chunks) * 256 || !aligned16(a.y) || (a.sum && !aligned16(a.sum)) ||
      !aligned16(a.gamma) || (a.beta && !aligned16(a.beta)))
    return false;
  for (int l = 0; l < a.lookups; ++l)
    if (!aligned16(a.table[l])) return false;
  return true;
}

// Launches of at most this many rows are latency-bound: gamma and beta load first.
constexpr int64_t kFewRows = 512;

template <class T, bool kParamsFirst>
bool launch_registers(const EmbedArgs& a, unsigned blocks, cudaStream_t stream, cudaError_t* e) {
  const dim3 block(32 * kWarpsPerBlock);
  auto go = [&](auto kernel) { *e = launch_dependent(kernel, blocks, block, 0, stream, a); };
  if (registers_fit(a, 1)) go(embed_ln_registers<T, 1, kParamsFirst>);
  else if (registers_fit(a, 2)) go(embed_ln_registers<T, 2, kParamsFirst>);
  else if (registers_fit(a, 3)) go(embed_ln_registers<T, 3, kParamsFirst>);
  else if (registers_fit(a, 4)) go(embed_ln_registers<T, 4, kParamsFirst>);
  else return false;
  return true;
}

}  // namespace

cudaError_t launch_embed_layer_norm(DType dtype, const EmbedArgs& args, cudaStream_t stream) {
  if (args.rows == 0 || args.hidden == 0) return cudaSuccess;
  const unsigned blocks = unsigned((args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock < 65535 * 8
                                       ? (args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock
                                       : 65535 * 8);
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t row_blocks = (args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if constexpr (sizeof(T) == 2) {
      const bool launched =
          row_blocks <= INT32_MAX && (args.rows <= kFewRows
                                          ? launch_registers<T, true>(args, unsigned(row_blocks), stream, &err)
                                          : launch_registers<T, false>(args, unsigned(row_blocks), stream, &err));
      if (launched) return;
    }
    err = launch_dependent(embed_layer_norm_kernel<T>, blocks, 32 * kWarpsPerBlock, 0, stream, args);
  });
  return err;
}

}  // namespace ingot::cuda
