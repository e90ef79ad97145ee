// The softmax of ingot.Attention's one-query path with the keys and values absorbed
// (attention_impl.h, AbsorbedQueryArgs): for each batch row b and head h,
//
//   p_h = softmax(q̃_h · X_bᵀ + mask),   x̄_h = p_h · X_b,   cbias_h = b_v,h (fill when undefined)
//
// where q̃_h = scale · W_k,h q_h comes from a product before this kernel and x̄_h · W_v,h + cbias_h,
// a product after it, is the head's context. The heads are the 16 rows of an mma.sync tile
// (H <= 16), so both products are tensor-core work on X in shared memory.
//
// A thread-block cluster of C CTAs (4 or 8) per batch row, each over its own keys (a slice of
// `tiles` tiles of 32), all of them in its shared memory at once, 8 warps:
//   phase 1  scores [16 × slice] = q̃ · X_sliceᵀ; warp w takes each tile's n-tile w % 4 (8 keys)
//            over half w / 4 of E, the halves' partial scores added in one order.
//   softmax  warp w the rows 2w, 2w + 1 of the slice: base 2 as the flash kernel, the slice's
//            max m and sum l, unnormalised exponentials rounded to T as the next A operand.
//   phase 2  o [16 × E] = P · X_slice, warp w the columns [w·E/8, (w+1)·E/8), into shared memory
//            (over the X tiles, done with).
//   combine  after a cluster barrier, CTA c reads every CTA's m, l and its columns
//            [c·E/C, (c+1)·E/C) of o through distributed shared memory and writes
//            x̄ = Σ_j o_j 2^(m_j - M) / Σ_j l_j 2^(m_j - M) (M = max m_j), summed in rank order (the
//            same bits every run), and its share of cbias.
// Where the time goes (H100, DistilBERT at b32: 32 batch rows, S 128, E 768, 12 heads; clusters
// of 4, one tile each): 13.7 µs in the graph, about 10 of them inside the CTAs, as a chain of
// dependent steps of 1000-3000 cycles each (clock64 in CTA 0: copies issued 3200, mask 1600, first
// tile 1500, phase 1 400, softmax 2000, phase 2 2000, cluster barrier 1500, the remote m and l
// 2000-3000, the remote o 5500). The same time, within a µs, with one CTA per batch row (32 CTAs,
// X's tiles loaded twice) and with 16-byte cp.async instead of bulk copies: what is left is the
// chain itself (the distributed-shared-memory round trips first), not the bytes or the issue.
// Pushing o to its owner instead of pulling it was slower: 8-byte remote stores from every thread
// with one barrier 23 µs, one bulk copy per (sender, owner) between shared memories 26 µs.
//
// Semantics as the single-query kernel: a NaN score or an all -inf row gives `fill` (NaN, or 0
// with nan_to_zero) for the head's context, by x̄ and cbias both being `fill`.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "backends/cuda/attention_device.cuh"
#include "backends/cuda/attention_impl.h"
#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"

namespace ingot::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8, kThreads = 32 * kWarps, kKeyTile = 32, kRows = 16;
constexpr int kMaxCluster = 8;
constexpr int kMaxTiles = int(kAbsorbedMaxKeys) / (kKeyTile * 4);  // a slice of a cluster of 4 at most
// Most N (heads × head size) whose V bias a thread keeps in registers: 8 per thread.
constexpr int kBiasPerThread = 8;

struct Params {
  const void* x;   // [B, S, E]
  const void* qt;  // [B, H, E]
  const void* bv;  // [N] or null
  void* xbar;      // [B, H, E]
  void* cbias;     // [B, N]
  int S, E, H, D, N, pos;
  int tiles;  // key tiles of each CTA's slice: keys [rank · 32 · tiles, (rank + 1) · 32 · tiles)
  const void* mask;
  int mask_type;
  int64_t mask_b, mask_h, mask_k, mask_at_pos;  // element strides; mask_at_pos: the query position's offset
  float filter, fill;
  bool causal;
  L2Prefetch prefetch;
};

// Shared memory, in this order: an mbarrier per tile, q̃ [16 × (E + 8)] and the slice's X tiles [32 × (E + 8)] of T
// (rows of E/8 + 1 16-byte chunks, an odd count: ldmatrix's 8 rows hit 8 distinct bank groups),
// partial scores [2 × 16 × K] and the mask's additive values [16 × K] as floats (K = 32 · tiles),
// P [16 × (K + 8)] of T, the slice's max and sum per row, then the combine's weight, max and sum
// per (CTA, row) and undefined flag per row. Phase 2's o [16 × E] floats goes over the X tiles.
constexpr size_t tile_elems(int E) { return size_t(kKeyTile) * size_t(E + 8); }
size_t smem_bytes(int tiles, int E) {
  const size_t K = size_t(kKeyTile) * size_t(tiles);
  return size_t(kMaxTiles) * 8 + (size_t(kRows) * size_t(E + 8) + size_t(tiles) * tile_elems(E)) * 2 + 3 * size_t(kRows) * K * 4 +
         size_t(kRows) * (K + 8) * 2 + size_t(2 * kRows) * 4 + size_t(3 * kMaxCluster * kRows) * 4 + size_t(kRows) * 4;
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t r[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

// The mask's additive values (base 2) for the slice's keys [key0, key0 + K) of batch row b into
// `madd`: one row when the mask does not vary by head, else H rows (pitch K). Four independent
// loads a thread at a time, all issued before any is used.
template <class M>
__device__ __forceinline__ void stage_mask(const Params& p, int b, int key0, int K, float* madd) {
  const int rows = p.mask_h != 0 ? p.H : 1, n = rows * K;
  const int64_t base = int64_t(b) * p.mask_b + p.mask_at_pos;
  for (int i0 = int(threadIdx.x); i0 < n; i0 += 4 * kThreads) {
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + u * kThreads, r = i / K, key = key0 + (i - r * K);
      v[u] = i < n && key < p.S ? mask_add<M>(p.mask, base + int64_t(r) * p.mask_h + int64_t(key) * p.mask_k, p.filter)
                                : 0.f;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = i0 + u * kThreads;
      if (i < n) madd[i] = mask_to_log2(v[u]);
    }
  }
}

template <class T, int kPairs>  // E = 128 · kPairs; kPairs: pairs of 8-column n-tiles per warp in phase 2
__global__ void __launch_bounds__(kThreads) absorbed_query_kernel(Params p) {
  constexpr int E = 128 * kPairs, kStride = E + 8, kKSteps = E / 32;
  extern __shared__ __align__(16) uint16_t smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const int C = int(cluster.num_blocks()), rank = int(cluster.block_rank());
  const int tiles = p.tiles, K = kKeyTile * tiles, pstride = K + 8, S = p.S;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);  // [kMaxTiles] mbarriers
  uint16_t* qs = smem + kMaxTiles * 4;
  uint16_t* xs = qs + kRows * kStride;
  float* sc = reinterpret_cast<float*>(xs + tiles * tile_elems(E));
  float* madd = sc + 2 * kRows * K;
  uint16_t* ps = reinterpret_cast<uint16_t*>(madd + kRows * K);
  float* stat_m = reinterpret_cast<float*>(ps + kRows * pstride);
  float* stat_l = stat_m + kRows;
  float* w_row = stat_l + kRows;                                 // [kMaxCluster × 16]
  float* remote_m = w_row + kMaxCluster * kRows;                 // [kMaxCluster × 16]
  float* remote_l = remote_m + kMaxCluster * kRows;              // [kMaxCluster × 16]
  int* undef_row = reinterpret_cast<int*>(remote_l + kMaxCluster * kRows);  // [16]
  float* part = reinterpret_cast<float*>(xs);  // [16 × E] after phase 2
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5, b = int(blockIdx.x) / C;
  const int g = lane >> 2, t4 = lane & 3, key0 = rank * K;
  const uint16_t* xb = static_cast<const uint16_t*>(p.x) + int64_t(b) * S * E;

  wait_prior_grids();
  allow_dependent_grids();
  // Every load first, on the copy engine: one bulk copy a row (rows are padded in shared
  // memory), q̃ with the first tile completing on barrier 0, tile t on barrier t; rows past S are
  // zeros (P is 0 there, but 0 times what shared memory held may not be). Then the mask and V's
  // bias into shared memory and registers while the copies are in flight. (16-byte cp.async from
  // every thread spent 660 of a warp's 1650 instructions here.)
  const uint16_t* q = static_cast<const uint16_t*>(p.qt) + int64_t(b) * p.H * E;
  auto tile_rows = [&](int t) { return max(0, min(kKeyTile, S - key0 - t * kKeyTile)); };
  if (tid == 0) {
    for (int t = 0; t < tiles; ++t) mbar_init(smem_addr(&bars[t]));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int t = 0; t < tiles; ++t)
      mbar_expect_tx(smem_addr(&bars[t]), uint32_t((tile_rows(t) + (t == 0 ? p.H : 0)) * E * 2));
  }
  for (int t = 0; t < tiles; ++t) {
    uint16_t* tile = xs + t * tile_elems(E);
    for (int i = tile_rows(t) * (E / 8) + tid; i < kKeyTile * (E / 8); i += kThreads)
      *reinterpret_cast<uint4*>(tile + (i / (E / 8)) * kStride + (i % (E / 8)) * 8) = make_uint4(0u, 0u, 0u, 0u);
  }
  __syncthreads();  // the barriers are initialised and their bytes expected
  if (tid < kKeyTile) {
    for (int t = 0; t < tiles; ++t)
      if (tid < tile_rows(t))
        bulk_copy(smem_addr(xs + t * tile_elems(E) + tid * kStride), xb + int64_t(key0 + t * kKeyTile + tid) * E, E * 2,
                  smem_addr(&bars[t]));
  } else if (tid < kKeyTile + p.H) {
    const int r = tid - kKeyTile;
    bulk_copy(smem_addr(qs + r * kStride), q + int64_t(r) * E, E * 2, smem_addr(&bars[0]));
  }
  const int n_share = (p.N + C - 1) / C, n_lo = rank * n_share, n_hi = min(p.N, n_lo + n_share);
  T bias[kBiasPerThread];
#pragma unroll
  for (int i = 0; i < kBiasPerThread; ++i) {
    const int n = n_lo + tid + i * kThreads;
    bias[i] = p.bv && n < n_hi ? static_cast<const T*>(p.bv)[n] : from_float<T>(0.f);
  }
  switch (p.mask_type) {
    case kMaskBool: stage_mask<uint8_t>(p, b, key0, K, madd); break;
    case kMaskF32: stage_mask<float>(p, b, key0, K, madd); break;
    case kMaskF16: stage_mask<__half>(p, b, key0, K, madd); break;
    case kMaskBF16: stage_mask<__nv_bfloat16>(p, b, key0, K, madd); break;
    case kMaskI32: stage_mask<int32_t>(p, b, key0, K, madd); break;
    case kMaskI64: stage_mask<int64_t>(p, b, key0, K, madd); break;
    default: break;
  }
  issue_l2_prefetch(p.prefetch);

  // Phase 1: partial scores of n-tile (warp % 4) over half (warp / 4) of E, two accumulators (even
  // and odd k steps) so that consecutive products do not wait for each other.
  const int ntile = warp & 3, half = warp >> 2;
  for (int t = 0; t < tiles; ++t) {
    mbar_wait(smem_addr(&bars[t]));
    const uint16_t* tile = xs + t * tile_elems(E);
    float s[2][4] = {};
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) {
      const int k0 = half * (E / 2) + k * 16;
      uint32_t a[4], kb[2];
      ldmatrix_x4(a, smem_addr(qs + (lane & 15) * kStride + k0 + (lane >> 4) * 8));
      ldmatrix_x2(kb, smem_addr(tile + (ntile * 8 + (lane & 7)) * kStride + k0 + ((lane >> 3) & 1) * 8));
      mma16816<T>(s[k & 1], a, kb[0], kb[1]);
    }
    float* out = sc + half * kRows * K + t * kKeyTile + ntile * 8 + 2 * t4;
    *reinterpret_cast<float2*>(out + g * K) = make_float2(s[0][0] + s[1][0], s[0][1] + s[1][1]);
    *reinterpret_cast<float2*>(out + (g + 8) * K) = make_float2(s[0][2] + s[1][2], s[0][3] + s[1][3]);
  }
  __syncthreads();

  // The slice's softmax of rows 2w and 2w + 1 (rows past H: zeros, never read back).
  for (int r = 2 * warp; r < 2 * warp + 2; ++r) {
    uint16_t* prow = ps + r * pstride;
    if (r >= p.H) {
      for (int j = lane; j < K; j += 32) prow[j] = 0;
      continue;
    }
    const float* mrow = madd + (p.mask_h != 0 ? r * K : 0);
    float m = neg_inf();
    for (int j = lane; j < K; j += 32) {
      const int key = key0 + j;
      float v = (sc[r * K + j] + sc[(kRows + r) * K + j]) * kLog2e;
      if (p.mask_type != kMaskNone) v += mrow[j];
      v = key >= S || (p.causal && key > p.pos) ? neg_inf() : v;
      sc[r * K + j] = v;
      m = fmaxf(m, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    // A slice with only -inf subtracts 0, so its exponentials are 0 rather than NaN.
    const float m_use = m == neg_inf() ? 0.f : m;
    float sum = 0.f;
    for (int j = lane; j < K; j += 32) {
      const float e = fast_exp2(sc[r * K + j] - m_use);
      sum += e;
      prow[j] = static_cast<uint16_t>(pack2<T>(e, 0.f) & 0xffffu);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) stat_m[r] = m, stat_l[r] = sum;
  }
  __syncthreads();

  // Phase 2: o = P · X_slice; warp w's columns [w·E/8, (w+1)·E/8).
  constexpr int kTiles = 2 * kPairs;
  float o[kTiles][4] = {};
  const int col0 = warp * (E / 8);
  for (int t = 0; t < tiles; ++t) {
    const uint16_t* tile = xs + t * tile_elems(E);
#pragma unroll
    for (int k = 0; k < kKeyTile / 16; ++k) {
      uint32_t a[4];
      ldmatrix_x4(a, smem_addr(ps + (lane & 15) * pstride + t * kKeyTile + k * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int dp = 0; dp < kPairs; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, smem_addr(tile + (k * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + col0 + dp * 16 +
                                        (lane >> 4) * 8));
        mma16816<T>(o[2 * dp], a, vb[0], vb[1]);
        mma16816<T>(o[2 * dp + 1], a, vb[2], vb[3]);
      }
    }
  }
  __syncthreads();  // every warp is done with the X tiles: o goes over them
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    const int col = col0 + 8 * j + 2 * t4;
    *reinterpret_cast<float2*>(part + g * E + col) = make_float2(o[j][0], o[j][1]);
    *reinterpret_cast<float2*>(part + (g + 8) * E + col) = make_float2(o[j][2], o[j][3]);
  }

  // Combine: every CTA's o, m and l are in its shared memory once the cluster has met.
  cluster.sync();
  // Per row: M, L and each CTA's weight 2^(m_j - M) / L (0 for a slice of -inf or none). Every
  // CTA's m and l first, one remote load each by C · 16 threads at once.
  if (tid < C * kRows) {
    const int j = tid / kRows, r = tid - j * kRows;
    remote_m[tid] = *cluster.map_shared_rank(stat_m + r, j);
    remote_l[tid] = *cluster.map_shared_rank(stat_l + r, j);
  }
  __syncthreads();
  if (tid < kRows) {
    const int r = tid;
    float M = neg_inf();
    for (int j = 0; j < C; ++j) M = fmaxf(M, remote_m[j * kRows + r]);
    float L = 0.f;
    for (int j = 0; j < C; ++j) {
      const float m = remote_m[j * kRows + r];
      L += m == neg_inf() ? 0.f : remote_l[j * kRows + r] * fast_exp2(m - M);
    }
    // A NaN score makes its slice's sum, and so L, NaN (fmaxf skips it in the max).
    const bool undefined = r >= p.H || L != L || M == neg_inf();
    undef_row[r] = undefined;
    for (int j = 0; j < C; ++j) {
      const float m = remote_m[j * kRows + r];
      w_row[j * kRows + r] = undefined || m == neg_inf() ? 0.f : fast_exp2(m - M) / L;
    }
  }
  __syncthreads();
  // CTA `rank`'s columns of x̄, two float4 vectors a thread at a time with all their remote loads
  // issued before the first add.
  const int share = E / C, c_lo = rank * share, vecs = p.H * (share / 4);  // E / C: a multiple of 16
  T* xbar = static_cast<T*>(p.xbar) + int64_t(b) * p.H * E;
  for (int v0 = tid; v0 < vecs; v0 += 2 * kThreads) {
    float4 x[2][kMaxCluster];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int v = min(v0 + u * kThreads, vecs - 1), r = v / (share / 4), col = c_lo + (v - r * (share / 4)) * 4;
#pragma unroll
      for (int j = 0; j < kMaxCluster; ++j)
        if (j < C) x[u][j] = *reinterpret_cast<const float4*>(cluster.map_shared_rank(part, j) + r * E + col);
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int v = v0 + u * kThreads, r = v / (share / 4), col = c_lo + (v - r * (share / 4)) * 4;
      if (v >= vecs) break;
      float y[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < kMaxCluster; ++j)
        if (j < C) {
          const float w = w_row[j * kRows + r];
          y[0] += x[u][j].x * w, y[1] += x[u][j].y * w, y[2] += x[u][j].z * w, y[3] += x[u][j].w * w;
        }
      if (undef_row[r]) y[0] = y[1] = y[2] = y[3] = p.fill;
      uint2 packed;
      packed.x = pack2<T>(y[0], y[1]), packed.y = pack2<T>(y[2], y[3]);
      *reinterpret_cast<uint2*>(xbar + int64_t(r) * E + col) = packed;
    }
  }
  T* cbias = static_cast<T*>(p.cbias) + int64_t(b) * p.N;
#pragma unroll
  for (int i = 0; i < kBiasPerThread; ++i) {
    const int n = n_lo + tid + i * kThreads;
    if (n < n_hi) cbias[n] = undef_row[n / p.D] ? from_float<T>(p.fill) : bias[i];
  }
  // No CTA leaves while another may still read its shared memory. Relaxed: the reads are done
  // (their values are used above), and nothing written needs ordering; the default release
  // arrive costs a GPU-wide memory barrier.
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

template <class T, int kPairs>
cudaError_t launch(const Params& p, unsigned grid, int cluster, size_t smem, int max_smem, cudaStream_t stream) {
  static const cudaError_t raised =
      cudaFuncSetAttribute(absorbed_query_kernel<T, kPairs>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem);
  if (raised != cudaSuccess) return raised;
  return launch_dependent_clusters(absorbed_query_kernel<T, kPairs>, dim3(grid), dim3(kThreads), smem, stream,
                                   dim3(unsigned(cluster), 1, 1), p);
}

template <class T>
cudaError_t launch_pairs(const Params& p, unsigned grid, int cluster, size_t smem, int max_smem, cudaStream_t stream) {
  switch (p.E / 128) {
    case 2: return launch<T, 2>(p, grid, cluster, smem, max_smem, stream);
    case 3: return launch<T, 3>(p, grid, cluster, smem, max_smem, stream);
    case 4: return launch<T, 4>(p, grid, cluster, smem, max_smem, stream);
    case 6: return launch<T, 6>(p, grid, cluster, smem, max_smem, stream);
    case 8: return launch<T, 8>(p, grid, cluster, smem, max_smem, stream);
    default: return cudaErrorInvalidValue;
  }
}

// The cluster size for S keys: 4 CTAs a batch row, 8 where a slice of 4 would not fit in shared
// memory; 0 where neither does. Tiles per CTA: *tiles.
int cluster_for(int64_t S, int64_t E, int max_smem, int* tiles) {
  for (int c : {4, kMaxCluster}) {
    const int t = int((S + int64_t(kKeyTile) * c - 1) / (int64_t(kKeyTile) * c));
    if (t <= kMaxTiles && smem_bytes(t, int(E)) <= size_t(std::max(max_smem, 0))) {
      *tiles = t;
      return c;
    }
  }
  return 0;
}

}  // namespace

bool absorbed_query_fits(DType dtype, int64_t S, int64_t E, int64_t H, int64_t D, int max_smem) {
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  const int64_t pairs = E / 128;
  if (E % 128 != 0 || !(pairs == 2 || pairs == 3 || pairs == 4 || pairs == 6 || pairs == 8)) return false;
  if (H < 1 || H > kRows || D < 1 || S < 1 || S > kAbsorbedMaxKeys) return false;
  int tiles = 0;
  const int c = cluster_for(S, E, max_smem, &tiles);
  return c > 0 && H * D <= int64_t(kBiasPerThread) * kThreads * c;
}

cudaError_t launch_absorbed_query(const AbsorbedQueryArgs& a, cudaStream_t stream) {
  const int mask_type = mask_type_of(a.mask.data, a.mask.dtype);
  if (mask_type < 0 || !absorbed_query_fits(a.dtype, a.S, a.E, a.H, a.D, a.max_smem) || a.pos < 0 || a.pos >= a.S)
    return cudaErrorInvalidValue;
  if (a.B == 0) return cudaSuccess;
  Params p{};
  const int cluster = cluster_for(a.S, a.E, a.max_smem, &p.tiles);
  if (a.B * cluster > INT32_MAX) return cudaErrorInvalidConfiguration;
  p.x = a.x, p.qt = a.qt, p.bv = a.bv, p.xbar = a.xbar, p.cbias = a.cbias;
  p.S = int(a.S), p.E = int(a.E), p.H = int(a.H), p.D = int(a.D), p.N = int(a.H * a.D), p.pos = int(a.pos);
  p.mask = a.mask.data, p.mask_type = mask_type, p.mask_b = a.mask.b, p.mask_h = a.mask.h, p.mask_k = a.mask.k;
  p.mask_at_pos = a.pos * a.mask.q;
  p.filter = a.mask.filter, p.fill = a.mask.nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN();
  p.causal = a.mask.causal;
  p.prefetch = a.prefetch;
  const size_t smem = smem_bytes(p.tiles, p.E);
  const unsigned grid = unsigned(a.B * cluster);
  return a.dtype == DType::kFloat16 ? launch_pairs<__half>(p, grid, cluster, smem, a.max_smem, stream)
                                    : launch_pairs<__nv_bfloat16>(p, grid, cluster, smem, a.max_smem, stream);
}

}  // namespace ingot::cuda
