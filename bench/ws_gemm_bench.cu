// A product of ingot's own for BERT's batch-32 shapes on Hopper, against the engine's cuBLASLt
// call: the first step of the lever docs/PERFORMANCE.md names for BERT-base b32 (a product that
// matches nvjet, then folds the LayerNorm into its epilogue). Developer sessions 33 and 34 have
// what each change below was worth.
//
//   out = A·Wᵀ + bias [+ residual | then GELU]   A [M, K], W [N, K] (a weight stored K-major),
//                                                 float16, fp32 accumulation, one rounding
//
// The kernel: persistent (one CTA an SM at most, each walking cluster tiles), warp-specialized
// (warpgroup 0 a producer whose one thread issues the copy engine's tensor copies into S
// 128-byte-swizzled stages, A evict-first and W evict-last in L2; warpgroups 1 and 2 consumers,
// rows 0-63 and 64-127 of a 128 x BN tile, one wgmma m64nBNk16 per 16 of K, setmaxnreg moving
// the producer's registers to them). A cluster of CM x CN CTAs covers CM row blocks and CN
// column blocks: the CN CTAs of a row block share its A tile (each copies 128 / CN rows,
// multicast to them) and the CM CTAs of a column block share its W tile (BN / CM rows each). A
// stage is refilled once every consumer of the cluster has released it (one empty barrier
// counting them all). While the consumers run a tile's epilogue the producer is already filling
// stages for their next tile. The epilogue adds bias (held in shared memory) and residual in
// fp32, rounds once, and stores 16 bytes a thread, or (variants "T") through shared memory and
// bulk tensor stores.
// On this machine's H200 nvjet's FFN 2 kernel (nvjet_sm90_hsh_192x128_64x5_1x2_..._coopB) is the
// "128x192 2x1" variant's shape: the same tile, stages, cluster and bytes into the SMs.
//
// Each variant's output is checked against cuBLASLt's (within 2 float16 ulps of the larger) and
// on sampled rows against a float64 reference, with the output poisoned (NaN) before the run.
// Timing: CUDA graphs of 10 launches, median of 100 replays, the two alternating over 3 rounds.
//
// The last row of out and FFN 2 is the engine's product with the LayerNorm folded into its epilogue
// (backends/cuda/product_norm.cu, grown out of this bench), timed against cuBLASLt + ingot's
// LayerNorm kernel and checked against their output and a float64 LayerNorm.
//
// Built for sm_90a (wgmma, setmaxnreg), linked with libingot (lt_gemm). On the GPU machine:
//   ws_gemm_bench                      one line per shape and variant; exits 1 when an output is wrong
//   ws_gemm_bench SHAPE [VARIANT]      that shape (out, ffn2, qkv, ffn1, ffn1_nogelu), variant (its index in
//                                      kVariants); --no-time: the checked launch alone (for ncu);
//                                      --mode 1-5: copies alone, products alone... (Epilogue::mode);
//                                      --rows M (default 4096, BERT-base at batch 32);
//                                      WS_TRACE=1: CTA 0's timeline (Epilogue::trace);
//                                      WS_FAST_TANH=1: GELU on tanh.approx (Epilogue::fast_tanh)
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/mma_sync.cuh"  // smem_addr
#include "backends/cuda/norm_impl.h"
#include "backends/cuda/product_norm_impl.h"
#include "backends/cuda/pointwise_activation.cuh"
#include "backends/cuda/wgmma.cuh"
#include "cuda_bench_util.cuh"


namespace {

using namespace ingot::bench;
using ingot::cuda::smem_addr;

constexpr int kBM = 128, kBK = 64, kThreads = 384, kMaxBias = 4096;

// Arrive on the barrier at the same offset in CTA `rank` of the cluster (the CTA itself included;
// without a cluster, a plain arrive). Release at CTA scope either way: the stage's readers (wgmma)
// have completed, and release at cluster scope costs a memory barrier (ERRBAR and CGAERRBAR in the
// SASS) that held back every stage: with it the copies alone of FFN 2 (1x1) took 49-54 us,
// without it 26 (H200).
template <int kCluster>
__device__ __forceinline__ void bar_arrive_in(uint32_t bar, uint32_t rank) {
  if constexpr (kCluster == 1) ingot::cuda::mbar_arrive(bar);
  else bar_arrive_cluster(cluster_addr(bar, rank));
}
struct Epilogue {
  const __half* bias;      // [N]
  const __half* residual;  // [M, N] or null
  __half* out;             // [M, N]
  int M, N, K;
  int gelu;  // GELU (tanh form, as cuBLASLt's epilogue; full-precision tanhf) after the bias
  // Diagnostics (the output is then wrong): 1 skips the products (the copies alone), 2 copies
  // only the first S stages and reuses them (the products alone), 3 the copies alone with every
  // CTA copying the first row block of A (A in L2), 4 the copies of A alone, 5 no stores of the
  // output (the epilogue's arithmetic and loads alone).
  int mode;
  // Non-null: CTA 0 stamps (%globaltimer, ns) when its producer has issued each stage's copies
  // ([0, 256)), when its first consumer has seen each stage full ([256, 512)), and when that
  // consumer starts and ends each of its first four tiles' epilogues ([512, 520)).
  unsigned long long* trace;
  // WS_FAST_TANH=1: GELU with the multifunction unit's tanh (tanh.approx.f32, about 2^-11
  // relative error) instead of tanhf, whose ~25 instructions a value are most of FFN 1's
  // epilogue (the PTX: ~3,100 of its ~4,250 instructions a thread).
  int fast_tanh;
};

__device__ __forceinline__ float gelu_tanh_approx(float x) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  return 0.5f * x * (1.f + t);
}

// The box as tensor_copy_multicast, with an L2 eviction policy (createpolicy).
__device__ __forceinline__ void tensor_copy_multicast_hint(uint32_t dst, const CUtensorMap* map, int x, int y,
                                                           uint32_t bar, uint16_t mask, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5, %6;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask), "l"(policy)
      : "memory");
}

// Four rounded pairs of a quad's row (pair jq: columns 8·jq + 2·t4, + 1 from `at`) go round the
// quad so that lane t4 stores columns 8·t4 .. + 7 as one 16-byte store (lane t4 sends pair
// (t4 - d) & 3 in round d).
__device__ __forceinline__ void store_quad(const uint32_t (&h)[4], const Epilogue& e, size_t at, int lane) {
  const int t4 = lane & 3;
  auto pick = [](const uint32_t (&a)[4], int i) { return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : a[3]; };
  uint32_t got[4];  // got[d]: the pair of columns 2·((t4 + d) & 3) of this lane's 8
#pragma unroll
  for (int d = 0; d < 4; ++d) got[d] = __shfl_sync(0xffffffffu, pick(h, (t4 - d) & 3), (lane & ~3) | ((t4 + d) & 3));
  const uint4 o{pick(got, (0 - t4) & 3), pick(got, (1 - t4) & 3), pick(got, (2 - t4) & 3), pick(got, (3 - t4) & 3)};
  if (e.mode != 5) *reinterpret_cast<uint4*>(e.out + at + 8 * t4) = o;
  else if ((o.x ^ o.y ^ o.z ^ o.w) == 0x12345678u) e.out[0] = __half{};  // keeps the work
}

// The epilogue of one consumer warpgroup's 64 x BN block, straight from the accumulators (row
// g (+ 8), columns 8j + 2·t4 (+ 1)): + bias + residual (+ GELU) in fp32, rounded once. The bias
// (shared memory) and residual of 64 columns are loaded (read-only path, so the stores do not
// order them) before any of them is used: one load latency per 64 columns, where loading each
// next to its use paid one per 8 (Nsight Compute: long-scoreboard stalls). kGelu is a template
// parameter: as a run-time test inside the unrolled loops it was 179 branches of the epilogue's
// ~4,500 PTX instructions.
// Stores: with kTmaStore, stmatrix puts four rounded 8 x 8 blocks a warp into the 128-byte
// swizzled staging boxes (the accumulator layout is stmatrix's fragment layout); otherwise the
// pairs of each 4 j go round the quad (lane t4 sends the pair of j = 4·group + ((t4 - d) & 3) in
// round d) so that lane t4 stores columns 8·(4·group + t4) .. + 7 as one 16-byte store (4-byte
// stores wrote every 32-byte sector twice, Nsight Compute: 47 % excess). The quad's shuffles and
// run-time picks were ~1,000 of the epilogue's PTX instructions.
// The staging address for ingot::cuda::swizzled_x4_at's blocks of consumer warpgroup c (its
// BN / 64 boxes at c · BN / 64), rows 16·warp + 8·r2 .. + 7: a thread reads its residual and
// writes its output where its accumulators belong.
template <int BN>
__device__ __forceinline__ uint32_t staging_at(uint32_t stg, int c, int j4, int r2, int warp, int lane) {
  return ingot::cuda::swizzled_x4_at(stg + uint32_t(c * (BN / 64)) * 8192u, 8192u, j4, warp * 16 + 8 * r2, lane);
}
__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t bits) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

template <int BN, bool kTmaStore, bool kGelu>
__device__ __forceinline__ void round_block(const float (&acc)[BN / 2], const Epilogue& e, const __half* bias_s, int m0,
                                            int n0, int c, int warp, int lane, uint32_t stg) {
  const int g = lane / 4, t4 = lane % 4, row = m0 + c * 64 + warp * 16 + g;
  auto finish = [&](float x0, float x1) {
    if constexpr (kGelu) {
      if (e.fast_tanh) {
        x0 = gelu_tanh_approx(x0), x1 = gelu_tanh_approx(x1);
      } else {
        x0 = ingot::cuda::activate(x0, ingot::cuda::PointwiseActivation::kGeluTanh);
        x1 = ingot::cuda::activate(x1, ingot::cuda::PointwiseActivation::kGeluTanh);
      }
    }
    const __half2 v = __floats2half2_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&v);
  };
  if constexpr (kTmaStore) {
    // The residual, when there is one, is in the staging boxes already (the producer's tensor
    // copies): read and overwritten in place.
#pragma unroll
    for (int j4 = 0; j4 < BN / 32; ++j4)
#pragma unroll
      for (int r2 = 0; r2 < 2; ++r2) {
        const uint32_t at = staging_at<BN>(stg, c, j4, r2, warp, lane);
        uint32_t res[4] = {0u, 0u, 0u, 0u}, h[4];
        if (e.residual) ingot::cuda::ldmatrix_x4(res, at);
#pragma unroll
        for (int jq = 0; jq < 4; ++jq) {
          const int j = 4 * j4 + jq;
          const float2 bb = __half22float2(*reinterpret_cast<const __half2*>(bias_s + n0 + 8 * j + 2 * t4));
          const float2 r = half2_bits_to_float2(res[jq]);
          h[jq] = finish(acc[4 * j + 2 * r2] + bb.x + r.x, acc[4 * j + 2 * r2 + 1] + bb.y + r.y);
        }
        ingot::cuda::stmatrix_x4(at, h);
      }
    return;
  }
  constexpr int kChunk = 8;
#pragma unroll
  for (int q = 0; q < BN / 8 / kChunk; ++q) {
    __half2 bv[kChunk], rv[2][kChunk];
#pragma unroll
    for (int jj = 0; jj < kChunk; ++jj) {
      const int col = n0 + 8 * (q * kChunk + jj) + 2 * t4;
      bv[jj] = *reinterpret_cast<const __half2*>(bias_s + col);
#pragma unroll
      for (int r2 = 0; r2 < 2; ++r2)
        rv[r2][jj] = e.residual ? __ldg(reinterpret_cast<const __half2*>(e.residual + size_t(row + 8 * r2) * e.N + col))
                                : __half2{};
    }
#pragma unroll
    for (int grp = 0; grp < kChunk / 4; ++grp)
#pragma unroll
      for (int r2 = 0; r2 < 2; ++r2) {
        uint32_t h[4];
#pragma unroll
        for (int jq = 0; jq < 4; ++jq) {
          const int jj = grp * 4 + jq, j = q * kChunk + jj;
          const float2 bb = __half22float2(bv[jj]), r = __half22float2(rv[r2][jj]);
          h[jq] = finish(acc[4 * j + 2 * r2] + bb.x + r.x, acc[4 * j + 2 * r2 + 1] + bb.y + r.y);
        }
        store_quad(h, e, size_t(row + 8 * r2) * e.N + n0 + 8 * (q * kChunk + grp * 4), lane);
      }
  }
}

// kTmaStore: each consumer warpgroup rounds its 64 x BN block into shared memory (128-byte
// swizzled boxes of 64 x 64) and one thread hands them to the copy engine (bulk tensor stores),
// so the warpgroup goes on to its next tile while the output drains; else 16-byte stores from
// registers. With kTmaStore a residual (`tr`, the same boxes) comes into those boxes by the
// producer's tensor copies while the tile's products run (res_full[c]), once the warpgroup's
// previous stores have read them (stg_free[c]): the epilogue's loads from L2 cost one latency
// per 64 columns.
template <int BN, int S, int CM, int CN, bool kTmaStore = false>
__global__ void __launch_bounds__(kThreads, 1)
    ws_gemm_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                   const __grid_constant__ CUtensorMap to, const __grid_constant__ CUtensorMap tr,
                   const Epilogue e) {
  constexpr int kCluster = CM * CN;
  constexpr uint32_t kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2;
  constexpr int kARows = kBM / CN, kBRows = BN / CM;  // rows each CTA copies for its group
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, bs = base + S * kABytes, stg = bs + S * kBBytes;  // stg: kTmaStore's staging
  __shared__ __align__(8) uint64_t full[S], empty[S], res_full[2], stg_free[2];
  const bool res_tma = kTmaStore && e.residual;
  // The bias, whole (N <= kMaxBias): read by every tile's epilogue, where loads from L2 cost one
  // latency per 64 columns (CTA 0's trace: a tile's epilogue 4 us of its 11).
  __shared__ __align__(16) __half bias_s[kMaxBias];
  const int tid = int(threadIdx.x), wg = tid / 128;
  const uint32_t rank = kCluster > 1 ? cluster_rank() : 0;
  const int cm = int(rank % CM), cn = int(rank / CM);
  const int tiles_m = e.M / (kBM * CM), tiles = tiles_m * (e.N / (BN * CN));
  const int cluster_id = int(blockIdx.x) / kCluster, clusters = int(gridDim.x) / kCluster;
  const int KT = e.K / kBK;

  if (tid == 0) {
    // The tensor maps' descriptors into the copy engine's cache before the first copy needs them.
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&ta)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tb)) : "memory");
    if constexpr (kTmaStore) asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&to)) : "memory");
    for (int s = 0; s < S; ++s) ingot::cuda::mbar_init(smem_addr(&full[s]), 1), ingot::cuda::mbar_init(smem_addr(&empty[s]), 2 * kCluster);
    for (int c = 0; c < 2; ++c) ingot::cuda::mbar_init(smem_addr(&res_full[c]), 1), ingot::cuda::mbar_init(smem_addr(&stg_free[c]), 1);
    if (res_tma) asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tr)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (kCluster > 1) cluster_sync();
  else __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      // The CTAs sharing this one's A rows differ in cn (mask over cn at this cm), those
      // sharing its W rows in cm.
      uint16_t a_mask = 0, b_mask = 0;
      for (int j = 0; j < CN; ++j) a_mask |= uint16_t(1u << (cm + CM * j));
      for (int i = 0; i < CM; ++i) b_mask |= uint16_t(1u << (i + CM * cn));
      uint64_t keep = 0, stream = 0;
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(stream));
      int it = 0, tile_i = 0;
      for (int t = cluster_id; t < tiles; t += clusters, ++tile_i) {
        const int m0 = ((t % tiles_m) * CM + cm) * kBM, n0 = ((t / tiles_m) * CN + cn) * BN;
        for (int kt = 0; kt < KT; ++kt, ++it) {
          if (res_tma && kt == (S < KT ? S : KT) - 1) {
            // The tile's residual, once the stages its first products need are on their way.
            for (int c = 0; c < 2; ++c) {
              if (tile_i > 0) ingot::cuda::mbar_wait_parity(smem_addr(&stg_free[c]), (tile_i - 1) & 1);
              const uint32_t rb = smem_addr(&res_full[c]);
              ingot::cuda::mbar_expect_tx(rb, uint32_t(64 * BN * 2));
              for (int bx = 0; bx < BN / 64; ++bx)
                ingot::cuda::tensor_copy_hint(stg + uint32_t(c * (BN / 64) + bx) * 8192u, &tr, n0 + 64 * bx, m0 + 64 * c, rb, stream);
            }
          }
          const int s = it % S;
          const uint32_t fb = smem_addr(&full[s]);
          if (e.mode == 2 && it >= S) continue;
          if (it >= S) ingot::cuda::mbar_wait_parity(smem_addr(&empty[s]), ((it / S) & 1) ^ 1);
          ingot::cuda::mbar_expect_tx(fb, e.mode == 4 ? kABytes : kABytes + kBBytes);
          const uint32_t ad = as + s * kABytes + cn * kARows * 128, bd = bs + s * kBBytes + cm * kBRows * 128;
          const int am = e.mode == 3 ? 0 : m0;
          // A streams through L2 once a row block; W is read by every row block: evict-first and
          // evict-last (copies alone of FFN 2: 25.9 -> 23.9 us, the whole product 1-3 % faster).
          if constexpr (CN > 1) tensor_copy_multicast_hint(ad, &ta, kt * kBK, am + cn * kARows, fb, a_mask, stream);
          else ingot::cuda::tensor_copy_hint(ad, &ta, kt * kBK, am, fb, stream);
          if (e.mode != 4) {
            if constexpr (CM > 1) tensor_copy_multicast_hint(bd, &tb, kt * kBK, n0 + cm * kBRows, fb, b_mask, keep);
            else ingot::cuda::tensor_copy_hint(bd, &tb, kt * kBK, n0, fb, keep);
          }
          if (e.trace && blockIdx.x == 0 && it < 256) e.trace[it] = global_ns();
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1, lt = tid % 128, warp = lt / 32, lane = lt % 32;
    for (int i = 8 * (tid - 128); i < e.N; i += 8 * 256) {
      *reinterpret_cast<uint4*>(bias_s + i) = __ldg(reinterpret_cast<const uint4*>(e.bias + i));
    }
    asm volatile("bar.sync 1, 256;\n" ::: "memory");  // the two consumer warpgroups
    float acc[BN / 2];
    int it = 0, tile_i = 0;
    for (int t = cluster_id; t < tiles; t += clusters, ++tile_i) {
      const int m0 = ((t % tiles_m) * CM + cm) * kBM, n0 = ((t / tiles_m) * CN + cn) * BN;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % S;
        if (e.mode != 2 || it < S) ingot::cuda::mbar_wait_parity(smem_addr(&full[s]), (it / S) & 1);
        if (kt == 0 && e.residual) {
          // The tile's residual into L2 while its products run (rows of BN halves: BN / 64 lines
          // of 128 bytes each), so that the epilogue's loads do not go to DRAM.
          for (int i = lt; i < 64 * (BN / 64); i += 128) {
            const __half* p = e.residual + size_t(m0 + c * 64 + i / (BN / 64)) * e.N + n0 + 64 * (i % (BN / 64));
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
          }
        }
        if (e.trace && blockIdx.x == 0 && lt == 0 && c == 0 && it < 256) e.trace[256 + it] = global_ns();
        if (e.mode == 1 || e.mode >= 3) {
          if (kt > 0 && lt < kCluster) bar_arrive_in<kCluster>(smem_addr(&empty[(it - 1) % S]), uint32_t(lt));
          continue;
        }
        ingot::cuda::wgmma_fence();
        ingot::cuda::wgmma_k64<__half, BN, false>(acc, as + s * kABytes + c * 64 * 128, bs + s * kBBytes, 0, kt > 0);
        ingot::cuda::wgmma_commit();
        if (res_tma && kt == 0 && tile_i > 0 && lt == 0) {
          // The previous tile's stores have read the staging boxes: the producer may refill them.
          asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          ingot::cuda::mbar_arrive(smem_addr(&stg_free[c]));
        }
        ingot::cuda::wgmma_wait<1>();  // the previous stage's products are done: release it
        if (kt > 0 && lt < kCluster) bar_arrive_in<kCluster>(smem_addr(&empty[(it - 1) % S]), uint32_t(lt));
      }
      ingot::cuda::wgmma_wait<0>();
      if (lt < kCluster) bar_arrive_in<kCluster>(smem_addr(&empty[(it - 1) % S]), uint32_t(lt));

      const bool stamp = e.trace && blockIdx.x == 0 && lt == 0 && c == 0 && it / KT <= 4;
      if (stamp) e.trace[512 + 2 * (it / KT - 1)] = global_ns();
      if (res_tma) {
        ingot::cuda::mbar_wait_parity(smem_addr(&res_full[c]), tile_i & 1);
      } else if constexpr (kTmaStore) {
        // The warpgroup's previous bulk stores have read the staging boxes before they are rewritten.
        if (lt == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      }
      if (e.gelu) round_block<BN, kTmaStore, true>(acc, e, bias_s, m0, n0, c, warp, lane, stg);
      else round_block<BN, kTmaStore, false>(acc, e, bias_s, m0, n0, c, warp, lane, stg);
      if constexpr (kTmaStore) {
        // The boxes written by ordinary stores are read by the copy engine: proxy fence, then one
        // thread stores them once the warpgroup is done.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
        if (lt == 0 && e.mode != 5) {
          for (int bx = 0; bx < BN / 64; ++bx)
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                         ::"l"(reinterpret_cast<uint64_t>(&to)), "r"(n0 + 64 * bx), "r"(m0 + 64 * c),
                         "r"(stg + uint32_t(c * (BN / 64) + bx) * 8192u)
                         : "memory");
          asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
      }
      if (stamp) e.trace[512 + 2 * (it / KT - 1) + 1] = global_ns();
    }
    if constexpr (kTmaStore)
      if (lt == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  // No CTA leaves while a peer may still copy into it or arrive on its barriers.
  if (kCluster > 1) cluster_sync();
}

struct Shape {
  const char* name;
  int M, N, K;
  bool residual, gelu;
};

struct Variant {
  const char* name;
  bool ln;  // the LayerNorm epilogue: timed against cuBLASLt + ingot's LayerNorm kernel
  // Launches the variant on as many CTAs as the GPU holds at once (at most one a tile), telling
  // how many through the last argument when it is not null; false when the variant does not take
  // the shape. Null: the engine's product + LayerNorm.
  bool (*launch)(const Shape&, const __half*, const __half*, const Epilogue&, cudaStream_t, int*);
};

template <int BN, int S, int CM, int CN, bool kTmaStore = false>
bool launch_variant(const Shape& sh, const __half* a, const __half* w, const Epilogue& e, cudaStream_t stream,
                    int* grid_out) {
  constexpr int kCluster = CM * CN;
  if (sh.M % (kBM * CM) || sh.N % (BN * CN) || sh.K % kBK || sh.N > kMaxBias) return false;
  const size_t smem = 1024 + size_t(S) * (kBM + BN) * kBK * 2 + (kTmaStore ? size_t(kBM) * BN * 2 : 0);
  static int grid = 0;
  static CUtensorMap ta{}, tb{}, to{}, tr{};
  // The maps describe buffers and a shape: re-encoded when either changes (a freed buffer's
  // address can come back for the next shape).
  static const void* maps_for[4] = {nullptr, nullptr, nullptr, nullptr};
  static int shape_for[3] = {0, 0, 0};
  auto* kernel = ws_gemm_kernel<BN, S, CM, CN, kTmaStore>;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = kCluster, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = smem, cfg.stream = stream, cfg.attrs = attr, cfg.numAttrs = 1;
  if (grid == 0) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    if (kCluster > 1) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    int clusters = 0;
    cfg.gridDim = dim3(kCluster * 256);
    CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    grid = clusters * kCluster;
  }
  if (maps_for[0] != a || maps_for[1] != w || maps_for[2] != e.out || maps_for[3] != e.residual || shape_for[0] != sh.M || shape_for[1] != sh.N ||
      shape_for[2] != sh.K) {
    if (!ingot::cuda::encode_tensor_map(&ta, ingot::DType::kFloat16, a, sh.M, sh.K, sh.K, kBM / CN, kBK, true) ||
        !ingot::cuda::encode_tensor_map(&tb, ingot::DType::kFloat16, w, sh.N, sh.K, sh.K, BN / CM, kBK, true)) {
      printf("tensor map refused\n");
      exit(1);
    }
    if (!ingot::cuda::encode_tensor_map(&to, ingot::DType::kFloat16, e.out, sh.M, sh.N, sh.N, 64, 64, true)) {
      printf("output tensor map refused\n");
      exit(1);
    }
    if (e.residual &&
        !ingot::cuda::encode_tensor_map(&tr, ingot::DType::kFloat16, e.residual, sh.M, sh.N, sh.N, 64, 64, true)) {
      printf("residual tensor map refused\n");
      exit(1);
    }
    maps_for[0] = a, maps_for[1] = w, maps_for[2] = e.out, maps_for[3] = e.residual;
    shape_for[0] = sh.M, shape_for[1] = sh.N, shape_for[2] = sh.K;
  }
  const int tiles = (sh.M / (kBM * CM)) * (sh.N / (BN * CN));
  cfg.gridDim = dim3(std::min(grid / kCluster, tiles) * kCluster);
  if (grid_out) *grid_out = int(cfg.gridDim.x);
  CK(cudaLaunchKernelEx(&cfg, kernel, ta, tb, to, tr, e));
  return true;
}

const Variant kVariants[] = {
    {"128x192 1x1", false, launch_variant<192, 5, 1, 1>},
    {"128x192 2x1", false, launch_variant<192, 5, 2, 1>},
    {"128x192 1x2", false, launch_variant<192, 5, 1, 2>},
    {"128x192 2x2", false, launch_variant<192, 5, 2, 2>},
    {"128x256 2x1", false, launch_variant<256, 4, 2, 1>},
    {"128x128 2x1", false, launch_variant<128, 6, 2, 1>},
    {"128x192 1x1 T", false, launch_variant<192, 4, 1, 1, true>},
    {"128x192 2x1 T", false, launch_variant<192, 4, 2, 1, true>},
    {"engine's product + LN", true, nullptr},
};

bool run_shape(const Shape& sh, cudaStream_t s, ingot::cuda::CudaHandles& handles, int only_variant, bool time,
               int mode) {
  const int M = sh.M, N = sh.N, K = sh.K;
  std::mt19937 rng(unsigned(M * 7 + N * 3 + K));
  std::normal_distribution<float> nd(0.f, 1.f);
  // BERT-like magnitudes: activations ~1, weights ~0.02-0.04.
  std::vector<__half> A(size_t(M) * K), W(size_t(K) * N), Wt(size_t(N) * K), B(N), R(size_t(M) * N);
  for (auto& v : A) v = __float2half(nd(rng));
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) W[size_t(k) * N + n] = Wt[size_t(n) * K + k] = __float2half(nd(rng) * 0.03f);
  for (auto& v : B) v = __float2half(nd(rng) * 0.1f);
  for (auto& v : R) v = __float2half(nd(rng));
  __half *dA = upload(A), *dW = upload(W), *dWt = upload(Wt), *dB = upload(B), *dR = sh.residual ? upload(R) : nullptr;
  __half *ref, *mine;
  CK(cudaMalloc(&ref, size_t(M) * N * 2));
  CK(cudaMalloc(&mine, size_t(M) * N * 2));

  ingot::cuda::GemmDesc desc;
  desc.m = M, desc.n = N, desc.k = K, desc.dtype = ingot::DType::kFloat16, desc.bias = dB;
  if (sh.residual) desc.beta = 1.f, desc.c_in = dR;
  if (sh.gelu) desc.activation = ingot::cuda::GemmActivation::kGeluTanh;
  auto baseline = [&] {
    const ingot::Status st = ingot::cuda::lt_gemm(handles, desc, dA, dW, ref);
    if (!st.is_ok()) { printf("lt_gemm: %s\n", st.message().c_str()); exit(1); }
  };
  baseline();
  CK(cudaStreamSynchronize(s));
  const std::vector<__half> want = download(ref, size_t(M) * N);
  const double flop = 2.0 * M * N * K;

  // The LayerNorm variants' reference: the same product, then ingot's LayerNorm kernel.
  const bool ln_shape = sh.residual && N % ingot::cuda::kProductNormTileCols == 0 && N <= ingot::cuda::kProductNormMaxN;
  std::vector<__half> G(N), Be(N), want_ln;
  for (auto& v : G) v = __float2half(1.f + 0.2f * nd(rng));
  for (auto& v : Be) v = __float2half(0.1f * nd(rng));
  __half *dG = upload(G), *dBe = upload(Be), *href = nullptr;
  void* part = nullptr;
  unsigned* count = nullptr;
  ingot::cuda::RowNormLaunch norm;
  if (ln_shape) {
    CK(cudaMalloc(&href, size_t(M) * N * 2));
    CK(cudaMalloc(&part, ingot::cuda::product_norm_exchange_bytes(M, N)));
    CK(cudaMalloc(&count, size_t(M / kBM + 1) * sizeof(unsigned)));
    CK(cudaMemset(count, 0, size_t(M / kBM + 1) * sizeof(unsigned)));
    norm.dtype = norm.param_dtype = ingot::DType::kFloat16;
    norm.x = ref, norm.gamma = dG, norm.beta = dBe, norm.y = href;
    norm.rows = norm.x_period = M, norm.d = N, norm.epsilon = 1e-12f, norm.sm_count = handles.sm_count;
    CK(ingot::cuda::launch_row_norm(norm, s));
    CK(cudaStreamSynchronize(s));
    want_ln = download(href, size_t(M) * N);
  }
  auto baseline_ln = [&] {
    baseline();
    CK(ingot::cuda::launch_row_norm(norm, s));
  };
  unsigned long long* trace = nullptr;
  if (std::getenv("WS_TRACE")) CK(cudaMalloc(&trace, 528 * sizeof(unsigned long long)));
  const char* fast = std::getenv("WS_FAST_TANH");
  const Epilogue e{dB, dR, mine, M, N, K, sh.gelu ? 1 : 0, mode, trace, fast && std::string(fast) == "1" ? 1 : 0,
};
  // The engine's product + LayerNorm (backends/cuda/product_norm.cu), on W as the graph stores it.
  ingot::cuda::ProductNormLaunch pn;
  pn.a = dA, pn.w = dW, pn.bias = dB, pn.residual = dR, pn.gamma = dG, pn.beta = dBe, pn.y = mine;
  pn.M = M, pn.N = N, pn.K = K, pn.epsilon = 1e-12f, pn.exchange = part, pn.counters = count;
  pn.sm_count = handles.sm_count;
  auto launch = [&](const Variant& v, int* grid) {
    if (v.launch) return v.launch(sh, dA, dWt, e, s, grid);
    CK(ingot::cuda::launch_product_norm(pn, s));
    if (grid) *grid = int((M + kBM - 1) / kBM * (N / ingot::cuda::kProductNormTileCols));
    return true;
  };

  // float64 reference of sampled rows, to say which of the two is off when they disagree.
  auto exact = [&](int r, int n) {
    double dot = 0;
    for (int k = 0; k < K; ++k) dot += double(__half2float(A[size_t(r) * K + k])) * __half2float(Wt[size_t(n) * K + k]);
    double x = dot + __half2float(B[n]);
    if (sh.residual) x += __half2float(R[size_t(r) * N + n]);
    if (sh.gelu) x = 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
    return x;
  };
  // float64 LayerNorm of row r of the float16-rounded product, for the LayerNorm variants.
  auto exact_ln = [&](int r) {
    std::vector<double> v(N), y(N);
    double mean = 0, var = 0;
    for (int n = 0; n < N; ++n) v[n] = __half2float(__float2half(float(exact(r, n)))), mean += v[n];
    mean /= N;
    for (int n = 0; n < N; ++n) var += (v[n] - mean) * (v[n] - mean);
    const double inv = 1.0 / std::sqrt(var / N + 1e-12);
    for (int n = 0; n < N; ++n) y[n] = (v[n] - mean) * inv * __half2float(G[n]) + __half2float(Be[n]);
    return y;
  };
  double base_err = 0;
  for (int r = 0; r < M; r += 97)
    for (int n = 0; n < N; n += 7) base_err = std::max(base_err, std::fabs(double(__half2float(want[size_t(r) * N + n])) - exact(r, n)));

  bool ok = true;
  for (int vi = 0; vi < int(std::size(kVariants)); ++vi) {
    const Variant& v = kVariants[vi];
    if (only_variant >= 0 && vi != only_variant) continue;
    if (v.ln && !ln_shape) continue;
    const std::vector<__half>& ref_out = v.ln ? want_ln : want;
    CK(cudaMemset(mine, 0xFF, size_t(M) * N * 2));  // NaN: an unwritten element fails the check
    int grid = 0;
    if (!launch(v, &grid)) continue;
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    if (trace) {  // a second launch, warm
      CK(cudaMemset(trace, 0, 528 * sizeof(unsigned long long)));
      launch(v, nullptr);
      CK(cudaStreamSynchronize(s));
      unsigned long long h[528];
      CK(cudaMemcpy(h, trace, sizeof h, cudaMemcpyDeviceToHost));
      printf("CTA 0 stages (us from the first issue): issued / full\n");
      for (int i = 0; i < std::min(48, K / kBK); ++i)
        printf("  %2d %7.3f %7.3f\n", i, (h[i] - h[0]) / 1e3, (h[256 + i] - h[0]) / 1e3);
      for (int i = 0; i < 4 && h[512 + 2 * i + 1] > h[512 + 2 * i]; ++i)
        printf("  epilogue of tile %d: %7.3f to %7.3f\n", i, (h[512 + 2 * i] - h[0]) / 1e3, (h[513 + 2 * i] - h[0]) / 1e3);
    }
    const std::vector<__half> got = download(mine, size_t(M) * N);
    double worst = 0, err = 0;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float x = __half2float(got[i]), y = __half2float(ref_out[i]);
      const float tol = 2.f * std::max(std::fabs(y), 1.f) / 1024.f;  // two float16 ulps
      if (!(std::fabs(x - y) <= tol)) ++bad;
      if (x == x) worst = std::max(worst, double(std::fabs(x - y)));
      else worst = INFINITY;
    }
    double ref_err = base_err;
    if (v.ln) {
      ref_err = 0;
      for (int r = 0; r < M; r += 97) {
        const std::vector<double> y = exact_ln(r);
        for (int n = 0; n < N; ++n) {
          err = std::max(err, std::fabs(double(__half2float(got[size_t(r) * N + n])) - y[n]));
          ref_err = std::max(ref_err, std::fabs(double(__half2float(want_ln[size_t(r) * N + n])) - y[n]));
        }
      }
    } else {
      for (int r = 0; r < M; r += 97)
        for (int n = 0; n < N; n += 7) err = std::max(err, std::fabs(double(__half2float(got[size_t(r) * N + n])) - exact(r, n)));
    }
    float tb = 0, tm = 0;
    for (int round = 0; round < (time ? 3 : 0); ++round) {
      if (v.ln) tb += chain_us(s, 10, baseline_ln);
      else tb += chain_us(s, 10, baseline);
      tm += chain_us(s, 10, [&] { launch(v, nullptr); });
    }
    tb /= 3, tm /= 3;
    if (!time) tb = tm = NAN;
    const bool right = bad == 0 || mode != 0;
    ok &= right;
    printf("%-5s %5dx%5dx%5d %-12s grid %3d: cuBLASLt %6.2f us (%4.0f TF/s) | own %6.2f us (%4.0f TF/s) %5.2fx | "
           "max |own - cuBLASLt| %.3g (%zu beyond 2 ulps), vs float64 own %.3g cuBLASLt %.3g%s\n",
           sh.name, M, N, K, v.name, grid, tb, flop / tb / 1e6, tm, flop / tm / 1e6, tb / tm, worst, bad, err, ref_err,
           right ? "" : "  WRONG");
  }
  for (__half* p : {dA, dW, dWt, dB, dR, ref, mine, dG, dBe, href})
    if (p) CK(cudaFree(p));
  if (part) CK(cudaFree(part));
  if (count) CK(cudaFree(count));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const char* only_shape = nullptr;
  int only_variant = -1;
  bool time = true;
  int mode = 0, rows = 4096;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-time") time = false;
    else if (std::string(argv[i]) == "--mode" && i + 1 < argc) mode = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--rows" && i + 1 < argc) rows = std::atoi(argv[++i]);
    else if (!only_shape) only_shape = argv[i];
    else only_variant = std::atoi(argv[i]);
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ingot::cuda::CudaHandles handles;
  handles.stream = s;
  if (cublasLtCreate(&handles.lt) != CUBLAS_STATUS_SUCCESS) { printf("cublasLtCreate failed\n"); return 1; }
  int dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&handles.sm_count, cudaDevAttrMultiProcessorCount, dev));
  void* ws = nullptr;
  CK(cudaMalloc(&ws, ingot::cuda::kGemmWorkspaceBytes));
  handles.gemm_workspace = ws, handles.gemm_workspace_bytes = ingot::cuda::kGemmWorkspaceBytes;
  const Shape shapes[] = {
      {"out", rows, 768, 768, true, false},
      {"ffn2", rows, 768, 3072, true, false},
      {"qkv", rows, 2304, 768, false, false},
      {"ffn1", rows, 3072, 768, false, true},
      {"ffn1_nogelu", rows, 3072, 768, false, false},  // what FFN 1's GELU costs
  };
  bool ok = true;
  for (const Shape& sh : shapes)
    if (!only_shape || std::string(only_shape) == sh.name) ok &= run_shape(sh, s, handles, only_variant, time, mode);
  return ok ? 0 : 1;
}
