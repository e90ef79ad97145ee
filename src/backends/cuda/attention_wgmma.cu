// ingot.Attention's core for many heads on Hopper (wgmma; built for sm_90a alone, CMakeLists.txt):
// launch_attention_wgmma (attention_impl.h), taken by launch_attention_core where
// attention_wgmma_fits says so: float16/bfloat16, head size 64, a key mask or none, no causal
// mask, S a multiple of 64 up to 256, and at least two query blocks a multiprocessor (BERT at
// batch 32: 768 query blocks).
//
// Why: attention.cu's flash kernel at BERT-base b32 s128 took 12.5 µs a layer, issue-bound
// (Nsight Compute: 3 CTAs an SM, 12 instructions per mma.sync m16n8k16: the ldmatrix fragment
// loads and address arithmetic of 128 warp-level products a 16-row block). A warpgroup's wgmma
// m64n64k16 does the work of 32 of those products in one instruction, reading both operands from
// shared memory where the copy engine put them, so a CTA's instructions are its softmax.
//
// A CTA is one warpgroup; it computes 2 query blocks of 64 rows of one (batch, head) one after the
// other (1 when S / 64 is odd) over the 64-key tiles of K and V, which all stay in shared memory
// (S <= 256). A head's CTAs (S / 128 of them, or S / 64) form a cluster, and CTA r copies key
// tiles r, r + cluster, ... of K and of V into the shared memory of all of them (the copy
// engine's multicast), so each tile leaves L2 once per head. At BERT's s128 that is one CTA a
// head, 384 CTAs at b32: one wave at 4 CTAs a multiprocessor (108 registers, 51 KB). Each K and
// V tile completes on its own mbarrier, armed (with the cluster barrier that makes the arming
// visible) before the wait for the kernel before. Per query block and key tile t:
//   S_t = Q · K_tᵀ               4 wgmma, both operands in shared memory (K-major)
//   online softmax of S_t        in registers, base 2, as attention.cu's flash kernel
//   O  += P_t · V_t              4 wgmma, P from registers (the accumulator layout is the
//                                register-A layout), V in shared memory (MN-major)
// S_{t+1}'s products are issued while P_t · V_t still runs; one wait covers both. The first
// product of a sum overwrites its accumulators (no zeroing, which would make ptxas serialize the
// products). The output goes through the block's Q buffer to whole-row stores.
// H100, BERT-base b32 s128 (graph trace, µs a layer): the mma.sync kernel 12.5; this kernel with
// one query block a CTA (768 CTAs, 1.45 waves) 12.9; with two (384, one wave) 10.5-10.75 (Nsight
// Compute: latency-bound, 2.8 warps a scheduler, 0.36 instructions issued a cycle; its data in
// L2, 2 MB of the 19 read from DRAM). %globaltimer stamps in every CTA: the first tile in 2.6-4.1
// µs after the wait, the two blocks' compute 5.0-6.5 µs after that. Issuing S_{i+1} before step
// i's softmax (two score arrays, 168 registers) did not change it (10.8-10.9). Model A/B against
// the mma.sync kernel (INGOT_CUDA_FLASH_WGMMA=0), GPU compute median of 300 runs, ms: BERT-base
// b32 1.4252 / 1.4552, 1.4449 / 1.4646, 1.4417 / 1.4629; DistilBERT b32 0.6717 / 0.6917, 0.6821
// / 0.6878, 0.6770 / 0.6889.
// Semantics are the flash kernel's (attention.cu's header): additive key-mask values in base 2,
// a row with a NaN score or no finite score takes `fill`.
#include <cuda.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "backends/cuda/attention_device.cuh"
#include "backends/cuda/attention_impl.h"
#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"  // smem_addr
#include "backends/cuda/wgmma.cuh"

namespace ingot::cuda {
namespace {

constexpr int kTile = 64;        // query rows of a CTA, keys of a tile; also the head size
constexpr int kMaxTiles = 4;     // S <= 256
constexpr int kMaxQBlocks = 2;   // query blocks a CTA computes, one after the other
constexpr int kThreads = 128;    // one warpgroup
constexpr uint32_t kTileBytes = kTile * 128;  // 64 rows of 64 16-bit elements

struct WgmmaCoreParams {
  void* context;
  int S, H, N, tiles;  // tiles: S / 64
  int qblocks;         // query blocks of a CTA (the others of its head: its cluster's)
  const void* mask;
  int mask_type;
  int64_t mask_b, mask_h, mask_k;
  float scale_log2, filter, fill;
  L2Prefetch prefetch;
};

// Shared memory: the CTA's Q blocks, the K tiles, the V tiles (1024-byte aligned, as the swizzle
// needs), then the key mask's additive values as fp32.
constexpr size_t wgmma_smem_bytes(int qblocks, int tiles) {
  return 1024 + size_t(qblocks + 2 * tiles) * kTileBytes + size_t(tiles) * kTile * 4;
}

template <class T>
__global__ void __launch_bounds__(kThreads) flash_wgmma_kernel(const __grid_constant__ CUtensorMap qkv_map,
                                                               const WgmmaCoreParams p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) / 1024 * 1024);
  const int tiles = p.tiles, qblocks = p.qblocks, cluster = tiles / qblocks, S = p.S;
  const uint32_t qs = smem_addr(smem), ks = qs + uint32_t(qblocks) * kTileBytes, vs = ks + uint32_t(tiles) * kTileBytes;
  float* kadd = reinterpret_cast<float*>(smem + size_t(qblocks + 2 * tiles) * kTileBytes);
  // Q block i at i, K tile t at kMaxQBlocks + t, V tile t at kMaxQBlocks + kMaxTiles + t; each
  // completes once (phase 0).
  __shared__ __align__(8) uint64_t bars[kMaxQBlocks + 2 * kMaxTiles];
  auto q_bar = [&](int i) { return smem_addr(&bars[i]); };
  auto k_bar = [&](int t) { return smem_addr(&bars[kMaxQBlocks + t]); };
  auto v_bar = [&](int t) { return smem_addr(&bars[kMaxQBlocks + kMaxTiles + t]); };
  const int tid = int(threadIdx.x), warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int bh = int(blockIdx.x), b = bh / p.H, h = bh - b * p.H, q0 = int(blockIdx.y) * qblocks * kTile;

  if (tid == 0) {
    for (int i = 0; i < kMaxQBlocks + 2 * kMaxTiles; ++i) mbar_init(smem_addr(&bars[i]));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int i = 0; i < qblocks; ++i) mbar_expect_tx(q_bar(i), kTileBytes);
    for (int t = 0; t < tiles; ++t) mbar_expect_tx(k_bar(t), kTileBytes), mbar_expect_tx(v_bar(t), kTileBytes);
  }
  // Every CTA of the cluster has armed its barriers before any copy lands in it.
  if (cluster > 1) asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  else __syncthreads();
  wait_prior_grids();
  allow_dependent_grids();

  if (tid == 0) {
    // Q0 and this CTA's first K tile alone, then the rest once that K tile is in: this CTA's
    // (t = rank, rank + cluster, ...: every tile once in the cluster, copied into the shared
    // memory of all of it) V and K tiles, then the other Q blocks. With every copy issued at
    // once, the 384 CTAs of BERT-base b32 had their first tile 2.6-4.1 µs after the wait
    // (%globaltimer stamps), behind the copies of the whole grid; staged, each CTA's first
    // product starts while the rest arrives. H100, model A/B, GPU compute median of 300 runs,
    // ms, staged / all at once: BERT-base b32 1.4312 / 1.4439, 1.4386 / 1.4441, 1.4387 / 1.4429;
    // DistilBERT b32 0.6762 / 0.6812, 0.6806 / 0.6847, 0.6771 / 0.6794.
    const int row0 = b * S, rank = int(blockIdx.y) % cluster;
    const int kcol = p.N + h * kTile, vcol = 2 * p.N + h * kTile;
    const uint16_t everyone = uint16_t((1u << cluster) - 1);
    auto copy_tile = [&](int col, int t, uint32_t base, uint32_t bar) {
      const uint32_t dst = base + uint32_t(t) * kTileBytes;
      if (cluster > 1) tensor_copy_multicast(dst, &qkv_map, col, row0 + t * kTile, bar, everyone);
      else tensor_copy(dst, &qkv_map, col, row0 + t * kTile, bar);
    };
    tensor_copy(qs, &qkv_map, h * kTile, row0 + q0, q_bar(0));
    copy_tile(kcol, rank, ks, k_bar(rank));
    mbar_wait(k_bar(rank));
    copy_tile(vcol, rank, vs, v_bar(rank));
    for (int t = rank + cluster; t < tiles; t += cluster) copy_tile(kcol, t, ks, k_bar(t)), copy_tile(vcol, t, vs, v_bar(t));
    for (int i = 1; i < qblocks; ++i)
      tensor_copy(qs + uint32_t(i) * kTileBytes, &qkv_map, h * kTile, row0 + q0 + i * kTile, q_bar(i));
  }
  // The key mask's additive values (0 without one, -inf past S), while the tiles arrive.
  const int64_t mbase = int64_t(b) * p.mask_b + int64_t(h) * p.mask_h;
  for (int k = tid; k < tiles * kTile; k += kThreads) {
    float v = 0.f;
    if (k >= S) v = neg_inf();
    else if (p.mask_type != kMaskNone) v = mask_to_log2(mask_value(p.mask, p.mask_type, mbase + int64_t(k) * p.mask_k, p.filter));
    kadd[k] = v;
  }
  issue_l2_prefetch(p.prefetch);
  __syncthreads();

  for (int blk = 0; blk < qblocks; ++blk) {
    const uint32_t qb = qs + uint32_t(blk) * kTileBytes;
    float o[32];  // written by tile 0's first P·V product (zeroing it would serialize the wgmma)
    float m[2] = {neg_inf(), neg_inf()}, l[2] = {0.f, 0.f};
    uint32_t pf[4][4];  // P_t as register-A fragments, one per 16 keys
    mbar_wait(q_bar(blk));

    for (int t = 0; t < tiles; ++t) {
      float s[32];  // written by the first product (no accumulation)
      mbar_wait(k_bar(t));
      wgmma_fence();
      const uint32_t kt = ks + uint32_t(t) * kTileBytes;
      wgmma_ss<T, false, false>(s, sw128_desc(qb), sw128_desc(kt));
#pragma unroll
      for (int kk = 1; kk < kTile / 16; ++kk) wgmma_ss<T, false>(s, sw128_desc(qb + kk * 32), sw128_desc(kt + kk * 32));
      wgmma_commit();
      wgmma_wait<0>();  // S_t, and P_{t-1} · V_{t-1} (so O may be rescaled)

#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float2 ka = *reinterpret_cast<const float2*>(kadd + t * kTile + 8 * j + 2 * t4);
        s[4 * j] = s[4 * j] * p.scale_log2 + ka.x, s[4 * j + 1] = s[4 * j + 1] * p.scale_log2 + ka.y;
        s[4 * j + 2] = s[4 * j + 2] * p.scale_log2 + ka.x, s[4 * j + 3] = s[4 * j + 3] * p.scale_log2 + ka.y;
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float alpha = online_softmax_row([&](int j, int c) -> float& { return s[4 * j + 2 * r + c]; }, m[r], l[r]);
        if (t > 0)
#pragma unroll
          for (int j = 0; j < 8; ++j) o[4 * j + 2 * r] *= alpha, o[4 * j + 2 * r + 1] *= alpha;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        pf[k][0] = pack2<T>(s[8 * k], s[8 * k + 1]);
        pf[k][1] = pack2<T>(s[8 * k + 2], s[8 * k + 3]);
        pf[k][2] = pack2<T>(s[8 * k + 4], s[8 * k + 5]);
        pf[k][3] = pack2<T>(s[8 * k + 6], s[8 * k + 7]);
      }
      mbar_wait(v_bar(t));
      wgmma_fence();
      const uint32_t vt = vs + uint32_t(t) * kTileBytes;
#pragma unroll
      for (int k = 0; k < 4; ++k) wgmma_rs<T>(o, pf[k], sw128_desc(vt + k * 16 * 128), t > 0 || k > 0);
      wgmma_commit();
    }
    wgmma_wait<0>();
    __syncthreads();  // every warp's products are done with this block's Q, which stages its output

    // The block's 64 x 64 output through its Q buffer (rows of 128 bytes, 16-byte chunk c of row
    // r at chunk c ^ (r % 8): both the fragment writes and the row reads are free of bank
    // conflicts), so that global memory sees whole 16-byte chunks of each row.
    uint8_t* stage = smem + size_t(blk) * kTileBytes;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float sum = quad_sum(l[r]);
      // A NaN score makes its exponential, and so the row's sum, NaN (fmaxf skips it in the max).
      const bool undefined = sum != sum || m[r] == neg_inf();
      const float inv = 1.f / sum;
      const int row = warp * 16 + g + 8 * r;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint32_t v = undefined ? pack2<T>(p.fill, p.fill) : pack2<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
        *reinterpret_cast<uint32_t*>(stage + row * 128 + ((j ^ (row & 7)) << 4) + 4 * t4) = v;
      }
    }
    __syncwarp();
    const int warp_row0 = q0 + blk * kTile + warp * 16;
    uint16_t* out = static_cast<uint16_t*>(p.context) + int64_t(b) * S * p.N + h * kTile;
#pragma unroll
    for (int c = lane; c < 16 * 8; c += 32) {
      const int r = c >> 3, ch = c & 7, row = warp * 16 + r;
      if (warp_row0 + r < S)
        *reinterpret_cast<uint4*>(out + int64_t(warp_row0 + r) * p.N + ch * 8) =
            *reinterpret_cast<const uint4*>(stage + row * 128 + ((ch ^ (row & 7)) << 4));
    }
  }
}

template <class T>
cudaError_t launch_typed(const CUtensorMap& map, const WgmmaCoreParams& p, dim3 grid, cudaStream_t stream) {
  static const cudaError_t raised = cudaFuncSetAttribute(flash_wgmma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         int(wgmma_smem_bytes(kMaxQBlocks, kMaxTiles)));
  if (raised != cudaSuccess) return raised;
  return launch_dependent_clusters(flash_wgmma_kernel<T>, grid, dim3(kThreads), wgmma_smem_bytes(p.qblocks, p.tiles),
                                   stream, dim3(1, unsigned(p.tiles / p.qblocks), 1), map, p);
}

}  // namespace

bool attention_wgmma_fits(const AttentionCoreArgs& a) {
  const int64_t tiles = a.S / kTile;
  return a.wgmma && (a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16) && a.D == kTile &&
         a.query_count == 0 && a.mask.q == 0 && !a.mask.causal && a.S % kTile == 0 && tiles >= 1 &&
         tiles <= kMaxTiles && a.B * a.H * tiles >= 2 * int64_t(a.sm_count) && a.B * a.H <= INT_MAX &&
         a.B * a.S <= INT_MAX;
}

cudaError_t launch_attention_wgmma(const AttentionCoreArgs& a, cudaStream_t stream) {
  const int mask_type = mask_type_of(a.mask.data, a.mask.dtype);
  if (!attention_wgmma_fits(a) || mask_type < 0) return cudaErrorInvalidValue;
  WgmmaCoreParams p{};
  p.context = a.context;
  p.S = int(a.S), p.H = int(a.H), p.N = int(a.H * a.D), p.tiles = int(a.S / kTile);
  p.qblocks = p.tiles % 2 == 0 ? 2 : 1;
  p.mask = a.mask.data, p.mask_type = mask_type, p.mask_b = a.mask.b, p.mask_h = a.mask.h, p.mask_k = a.mask.k;
  p.scale_log2 = a.scale * kLog2e, p.filter = a.mask.filter;
  p.fill = a.mask.nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN();
  p.prefetch = a.prefetch;
  // Boxes of 64 rows x 64 columns (128 bytes: the swizzle span) of qkv [B·S, 3N].
  CUtensorMap map{};
  if (!encode_tensor_map(&map, a.dtype, a.qkv, a.B * a.S, 3 * a.H * a.D, 3 * a.H * a.D, kTile, kTile, true))
    return cudaErrorNotSupported;
  const dim3 grid{unsigned(a.B * a.H), unsigned(p.tiles / p.qblocks)};
  return a.dtype == DType::kFloat16 ? launch_typed<__half>(map, p, grid, stream)
                                    : launch_typed<__nv_bfloat16>(map, p, grid, stream);
}

}  // namespace ingot::cuda
