// ingot.Attention's QKV product and core in one kernel, for sm_90a (attention_impl.h has the
// contract: projected_attention_fits, launch_projected_attention).
//
// Why: with a sequence of 128 positions and heads of 64, the product's 128 x 192 tile at rows
// b·128 and columns {h·64, N + h·64, 2N + h·64} of W_qkv is all of Q, K and V of one (batch, head):
// the attention of that head can run in the epilogue of its tile, so qkv [B·S, 3N] never goes
// through L2 (BERT-base b32: 19 MB written and read back a layer) and the core's launch and its
// first loads are gone. Unfused, a layer took 21.7 µs of QKV product and 10.0 of core (H200, graph
// trace of developer session 35).
//
// A persistent grid (one CTA a multiprocessor, tiles t = b·H + h strided over it), four
// warpgroups a CTA:
//   0, one thread: the copy engine's tensor copies of X's [128 x 64] box and W's three [64 x 64]
//       boxes (Q's, K's and V's columns of the head) a K step into kStages 128-byte-swizzled
//       stages, running ahead into the next tile;
//   1 and 2 (c = 0, 1): positions 64c .. 64c + 63, one wgmma m64n192k16 a 16 of K (W MN-major
//       as stored), then q|k|v = rounded(acc + bias) (what the unfused product would have
//       stored) through stmatrix into six 64 x 64 boxes [Q0 Q1 K0 K1 V0 V1] (K and V of the 128
//       keys contiguous), and on to the next tile;
//   3: the attention of the tile, while the products of the next one run, for query blocks
//       qb = 0, 1 in turn:
//         S = Q_qb Kᵀ                       4 wgmma m64n128k16, both operands in shared memory;
//         P = 2^(S·scale·log2 e + mask - max) over all 128 keys at once (no online rescaling);
//         O = P V / rowsum                  8 wgmma m64n64k16, P from registers;
//         O into Q_qb's box, out by the copy engine to context [B·S, N] at (b·128 + 64qb, h·64).
// The boxes change hands through two named barriers (filled: products to attention; free: back).
// H200, BERT-base b32, graph trace of developer session 35 (µs a layer): 30.4-33.5 with warpgroups
// 1 and 2 doing the attention too (the tensor cores idle meanwhile); 27.2-29.0 as above. The
// products' copies are ~7 TB/s of L2 (cuBLASLt's QKV product too), yet clusters of two sharing W
// by multicast (30 % fewer L2 bytes; branch wip/qkv-cluster-rebased, developer session 36) ran
// at the same 28.4 µs: L2's bandwidth is not the bound. Nor did the out-projection and LayerNorm
// in this kernel pay (branch wip/attention-block: its out tiles wait for the last heads).
// Semantics are attention_wgmma.cu's (attention.cu's header): additive key-mask values in base 2,
// a row with a NaN score or no finite score takes `fill`.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <limits>

#include "backends/cuda/attention_device.cuh"
#include "backends/cuda/attention_impl.h"
#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/wgmma.cuh"
#include "backends/cuda/wgmma_stages.cuh"

namespace ingot::cuda {
namespace {

constexpr int kS = 128, kD = 64, kBN = 3 * kD, kBK = 64, kStages = 4, kThreads = 512;
constexpr uint32_t kBoxBytes = 64 * 64 * 2, kABytes = kS * kBK * 2, kWBytes = kBN * kBK * 2;
constexpr uint32_t kStagingBytes = 6 * kBoxBytes;
constexpr size_t kSmemBytes = 1024 + size_t(kStages) * (kABytes + kWBytes) + kStagingBytes;

struct Params {
  const void* bias;  // [3N] or null
  int tiles, H, N, K;
  const void* mask;
  int mask_type;
  int64_t mask_b, mask_h, mask_k;
  float scale_log2, filter, fill;
  L2Prefetch prefetch;
};

// Named barriers (0 is __syncthreads): the product warpgroups' own; the boxes filled (product
// warpgroups arrive, the attention warpgroup waits); the boxes free again (the other way round);
// the attention warpgroup's own.
constexpr int kBarProducts = 1, kBarFilled = 2, kBarFree = 3, kBarAttention = 4;

__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Product warpgroup c's part of a tile: rows 64c .. 64c + 63 of X · [W_q | W_k | W_v]'s head
// columns, then q|k|v = rounded(acc + bias) into the boxes.
template <class T>
__device__ __forceinline__ void tile_products(const Params& p, int b, int h, int c, int KT, int& it, int parity,
                                              uint32_t as, uint32_t ws, uint32_t stg, uint64_t* full,
                                              uint64_t* empty, T (*bias_s)[kBN]) {
  const int lt = int(threadIdx.x) % 128, warp = lt / 32, lane = lt % 32, t4 = lane % 4;
  const int ct = int(threadIdx.x) - 128;  // 0 .. 255 over both product warpgroups
  // This tile's bias (3 x 64 values, 24 threads of 16 bytes) into registers before the products,
  // into shared memory after them.
  uint4 bias_r{0u, 0u, 0u, 0u};
  if (ct < kBN / 8 && p.bias)
    bias_r = __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(p.bias) + (ct / 8) * p.N + h * kD + (ct % 8) * 8));
  // Defined before the products read them: with the first product's accumulators left
  // undefined, ptxas keeps the last tile's live around the loop (spills, serialized wgmma).
  float acc[kBN / 2];
#pragma unroll
  for (int i = 0; i < kBN / 2; ++i) acc[i] = 0.f;
  wgmma_k_steps<T, kBN, kStages>(acc, KT, it, as + c * 64 * 128, kABytes, ws, kWBytes, kBoxBytes, full, empty, lt == 0);
  if (lt == 0) mbar_arrive(smem_addr(&empty[(it - 1) % kStages]));  // the next tile's copies may use it
  if (ct < kBN / 8) *reinterpret_cast<uint4*>(&bias_s[parity][8 * ct]) = bias_r;
  bar_sync(kBarProducts, 256);  // the bias is in
  bar_sync(kBarFree, 384);      // the last tile's attention is done with the boxes

  // Q_c at box c, K_c at 2 + c, V_c at 4 + c.
#pragma unroll
  for (int j4 = 0; j4 < kBN / 32; ++j4)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      uint32_t v[4];
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) {
        const int j = 4 * j4 + jq, col = 8 * j + 2 * t4;
        const float2 bb = unpack2<T>(*reinterpret_cast<const uint32_t*>(&bias_s[parity][col]));
        v[jq] = pack2<T>(acc[4 * j + 2 * r2] + bb.x, acc[4 * j + 2 * r2 + 1] + bb.y);
      }
      stmatrix_x4(swizzled_x4_at(stg + uint32_t(c) * kBoxBytes, 2 * kBoxBytes, j4, warp * 16 + 8 * r2, lane), v);
    }
  // The boxes, written by ordinary stores, are read by wgmma (the async proxy).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  bar_arrive(kBarFilled, 384);
}

// The attention warpgroup's part of a tile: for query block qb (positions 64qb .. + 63),
// softmax(Q_qb Kᵀ · scale + mask) V over the 128 keys into Q_qb's box (its products are done).
template <class T>
__device__ __forceinline__ void block_attention(const Params& p, int qb, uint32_t stg, uint8_t* stg_ptr,
                                                const float* kadd) {
  const int lt = int(threadIdx.x) % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
  const uint32_t q_box = stg + uint32_t(qb) * kBoxBytes, k_all = stg + 2 * kBoxBytes, v_all = stg + 4 * kBoxBytes;
  float s[kS / 2];  // m64n128: 4 accumulators a thread per 8 keys
  wgmma_fence();
  wgmma_k64<T, kS, false>(s, q_box, k_all, 0, false);
  wgmma_commit();
  wgmma_wait<0>();

  // Each of the thread's two rows over all keys (a quad holds a row: n-tile j, columns
  // 8j + 2·t4 + {0, 1}).
  float m[2], l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = neg_inf();
#pragma unroll
    for (int j = 0; j < kS / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * r + e];
        x = x * p.scale_log2 + kadd[8 * j + 2 * t4 + e];
        mx = fmaxf(mx, x);
      }
    m[r] = quad_max(mx);
    // A row with no finite score subtracts 0, so 2^(-inf - 0) = 0 instead of NaN.
    const float m_use = m[r] == neg_inf() ? 0.f : m[r];
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kS / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[4 * j + 2 * r + e];
        x = fast_exp2(x - m_use);
        sum += x;
      }
    l[r] = quad_sum(sum);
  }
  uint32_t pf[kS / 16][4];  // P as register-A fragments, one per 16 keys
#pragma unroll
  for (int k = 0; k < kS / 16; ++k) {
    pf[k][0] = pack2<T>(s[8 * k], s[8 * k + 1]);
    pf[k][1] = pack2<T>(s[8 * k + 2], s[8 * k + 3]);
    pf[k][2] = pack2<T>(s[8 * k + 4], s[8 * k + 5]);
    pf[k][3] = pack2<T>(s[8 * k + 6], s[8 * k + 7]);
  }
  float o[32];
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < kS / 16; ++k) wgmma_rs<T>(o, pf[k], sw128_desc(v_all + k * 16 * 128), k > 0);
  wgmma_commit();
  wgmma_wait<0>();
  bar_sync(kBarAttention, 128);  // every warp's products are done with Q_qb's box

  // O / rowsum, 128-byte swizzled as the copy engine stores it: 16-byte chunk j of row r at
  // chunk j ^ (r % 8).
  uint8_t* out_box = stg_ptr + size_t(qb) * kBoxBytes;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    // A NaN score makes its exponential, and so the row's sum, NaN (fmaxf skips it in the max).
    const bool undefined = l[r] != l[r] || m[r] == neg_inf();
    const float inv = 1.f / l[r];
    const int row = warp * 16 + g + 8 * r;
#pragma unroll
    for (int j = 0; j < kD / 8; ++j) {
      const uint32_t v = undefined ? pack2<T>(p.fill, p.fill) : pack2<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
      *reinterpret_cast<uint32_t*>(out_box + row * 128 + ((j ^ (row & 7)) << 4) + 4 * t4) = v;
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  bar_sync(kBarAttention, 128);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    projected_attention_kernel(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
                               const __grid_constant__ CUtensorMap tc, const Params p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, ws = base + kStages * kABytes, stg = ws + kStages * kWBytes;
  uint8_t* stg_ptr = smem_raw + (stg - smem_addr(smem_raw));
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  // Double-buffered by tile parity: a warp may load the next tile's values while another of its
  // warpgroup still reads this tile's.
  __shared__ __align__(16) T bias_s[2][kBN];
  __shared__ float kadd_s[2][kS];
  const int tid = int(threadIdx.x), wg = tid / 128;
  const int KT = (p.K + kBK - 1) / kBK;

  if (tid == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tx)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tw)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tc)) : "memory");
    for (int s = 0; s < kStages; ++s) mbar_init(smem_addr(&full[s])), mbar_init(smem_addr(&empty[s]), 2);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  wait_prior_grids();  // X, and the mask and bias where kernels before wrote them

  if (wg == 0) {  // the copies
    if (tid != 0) return;
    const uint64_t again = l2_evict_last_policy();
    int it = 0;
    for (int tile = int(blockIdx.x); tile < p.tiles; tile += int(gridDim.x)) {
      const int b = tile / p.H, h = tile - b * p.H;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % kStages;
        const uint32_t fb = smem_addr(&full[s]);
        if (it >= kStages) mbar_wait_parity(smem_addr(&empty[s]), ((it / kStages) & 1) ^ 1);
        mbar_expect_tx(fb, kABytes + kWBytes);
        tensor_copy(as + s * kABytes, &tx, kt * kBK, b * kS, fb);
        for (int q = 0; q < 3; ++q)
          tensor_copy_hint(ws + s * kWBytes + q * kBoxBytes, &tw, q * p.N + h * kD, kt * kBK, fb, again);
      }
      if (tile == int(blockIdx.x)) issue_l2_prefetch(p.prefetch);
    }
    return;
  }

  if (wg < 3) {  // the products
    int it = 0, parity = 0;
    for (int tile = int(blockIdx.x); tile < p.tiles; tile += int(gridDim.x), parity ^= 1) {
      const int b = tile / p.H, h = tile - b * p.H;
      if (tile + int(gridDim.x) >= p.tiles) allow_dependent_grids();
      tile_products<T>(p, b, h, wg - 1, KT, it, parity, as, ws, stg, full, empty, bias_s);
    }
    return;
  }

  // The attention warpgroup.
  const int lt = tid - 384;
  bar_arrive(kBarFree, 384);  // the boxes start free
  int parity = 0;
  for (int tile = int(blockIdx.x); tile < p.tiles; tile += int(gridDim.x), parity ^= 1) {
    const int b = tile / p.H, h = tile - b * p.H;
    // The key mask's additive values, while the products run.
    float v = 0.f;
    if (p.mask_type != kMaskNone)
      v = mask_to_log2(
          mask_value(p.mask, p.mask_type, int64_t(b) * p.mask_b + int64_t(h) * p.mask_h + int64_t(lt) * p.mask_k, p.filter));
    kadd_s[parity][lt] = v;
    bar_sync(kBarAttention, 128);
    bar_sync(kBarFilled, 384);
    for (int qb = 0; qb < 2; ++qb) {
      block_attention<T>(p, qb, stg, stg_ptr, kadd_s[parity]);
      if (lt == 0) tensor_store(&tc, h * kD, b * kS + 64 * qb, stg + uint32_t(qb) * kBoxBytes), bulk_commit();
    }
    if (lt == 0) bulk_wait_read();  // the boxes are written again by the next tile
    if (tile + int(gridDim.x) < p.tiles) bar_arrive(kBarFree, 384);
  }
  // The last stores must have read the boxes before the CTA ends; their writes complete with
  // the grid (product_norm.cu says why not wait for them).
  if (lt == 0) bulk_wait_read();
}

template <class T>
cudaError_t launch(const ProjectedAttentionArgs& a, const Params& p, cudaStream_t stream) {
  static const cudaError_t raised = cudaFuncSetAttribute(
      projected_attention_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes));
  if (raised != cudaSuccess) return raised;
  const int64_t N = a.H * kD;
  CUtensorMap tx{}, tw{}, tc{};
  if (!encode_tensor_map(&tx, a.dtype, a.x, a.B * kS, a.E, a.E, kS, kBK, true) ||
      !encode_tensor_map(&tw, a.dtype, a.w, a.E, 3 * N, 3 * N, kBK, 64, true) ||
      !encode_tensor_map(&tc, a.dtype, a.context, a.B * kS, N, N, 64, 64, true))
    return cudaErrorNotSupported;
  const unsigned grid = unsigned(p.tiles < a.sm_count ? p.tiles : a.sm_count);
  return launch_dependent(projected_attention_kernel<T>, dim3(grid), dim3(kThreads), kSmemBytes, stream, tx, tw, tc, p);
}

}  // namespace

bool projected_attention_fits(const ProjectedAttentionArgs& a) {
  return (a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16) && a.cc_major == 9 && a.cc_minor == 0 &&
         a.S == kS && a.D == kD && a.H > 0 && a.E > 0 && a.E % 8 == 0 && a.mask.q == 0 && !a.mask.causal &&
         a.sm_count > 0 && a.B * a.H >= a.sm_count && a.B * a.H <= INT_MAX && a.B * kS <= INT_MAX &&
         3 * a.H * kD <= INT_MAX;
}

cudaError_t launch_projected_attention(const ProjectedAttentionArgs& a, cudaStream_t stream) {
  const int mask_type = mask_type_of(a.mask.data, a.mask.dtype);
  if (!projected_attention_fits(a) || mask_type < 0 || !a.x || !a.w || !a.context) return cudaErrorInvalidValue;
  // 16-byte vector loads of the bias.
  if (a.bias && reinterpret_cast<uintptr_t>(a.bias) % 16 != 0) return cudaErrorNotSupported;
  Params p{};
  p.bias = a.bias;
  p.tiles = int(a.B * a.H), p.H = int(a.H), p.N = int(a.H * kD), p.K = int(a.E);
  p.mask = a.mask.data, p.mask_type = mask_type, p.mask_b = a.mask.b, p.mask_h = a.mask.h, p.mask_k = a.mask.k;
  p.scale_log2 = a.scale * kLog2e, p.filter = a.mask.filter;
  p.fill = a.mask.nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN();
  p.prefetch = a.prefetch;
  return a.dtype == DType::kFloat16 ? launch<__half>(a, p, stream) : launch<__nv_bfloat16>(a, p, stream);
}

}  // namespace ingot::cuda
