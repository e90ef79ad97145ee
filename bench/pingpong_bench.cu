// A ping-pong product of ingot's own against the engine's cuBLASLt call (lt_gemm) at BERT-base's
// batch-32 shapes, at the full clock and back to back at the board's power limit. A prototype, not
// in the engine: developer session 44 (docs/PERFORMANCE.md) asked whether hiding each tile's
// epilogue under the next tile's products saves the energy that cuBLASLt's K = 768 products spend
// beyond its K = 3072 one (1.19-1.45 against 1.07-1.21 pJ a FLOP back to back); it cannot say yet,
// because this kernel runs at 0.81-0.95x of nvjet's speed (see the kernel's notes).
//
//   out = act(A·W + bias)   A [M, K], W [K, N] as the graph stores it, float16, fp32
//                           accumulation; act: none or GELU's tanh form (tanh.approx, relative
//                           error ~2^-11)
//
// Each variant's output is checked against cuBLASLt's (within 2 float16 ulps of the larger, the
// output poisoned with NaN first) and on sampled rows against a float64 reference. Timing, the two
// alternating over the rounds: full clock, CUDA graphs of 10 launches, median of 100 replays
// (chain_us); sustained, a graph of 20 launches replayed back to back for --seconds after a second
// of the same: µs and mJ a launch (the board's energy counter, NVML; coarse: two kernels' energies
// compare only when far apart) and the median SM clock (ingot bench's clock monitor).
//
// Built for sm_90a (wgmma, setmaxnreg), linked with libingot (lt_gemm). On the GPU machine:
//   pingpong_bench [SHAPE] [--rows M] [--seconds S] [--rounds R] [--variant V] [--mode 0|1|2]
//                  [--lsu-store]
//   SHAPE: ffn1 (GELU), ffn1_nogelu, qkv, out, ffn2 (all by default); V: 0-3, the kernel's variants
//   (clusters of 1 and 2, full and half staging; all by default); --mode 1 times the kernel without
//   its output's stores, 2 without its epilogue (timing aids: outputs checked in mode 0 first);
//   --lsu-store: the output by 16-byte shared loads and global stores instead of bulk tensor
//   stores. Exits 1 when an output is wrong.
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_clock_monitor.h"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/half_pair.cuh"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/wgmma.cuh"
#include "cuda_bench_util.cuh"

namespace {

using namespace ingot::bench;
using namespace ingot::cuda;

// The kernel: persistent, one CTA a multiprocessor at most, warp-specialized, 128 x 128 tiles
// taken in turn by two consumer warpgroups.
//
//   warpgroup 0, one thread: the copy engine's tensor copies of A's [128 x 64] box and W's two
//       [64 x 64] boxes a K step into kStages 128-byte-swizzled stages (A evict-first, W
//       evict-last in L2), tile after tile of the CTA's (tiles blockIdx.x, + gridDim.x, ...);
//   warpgroups 1 and 2: the CTA's even and odd tiles, a whole tile each (two wgmma m64n128k16 a 16
//       of K: rows 0-63 and 64-127, 128 accumulators a thread), then the tile's epilogue: bias,
//       activation, one rounding, stmatrix into the warpgroup's own staging boxes, bulk tensor
//       stores. The stages go round in tile order, so while one warpgroup runs its epilogue the
//       other's tile is already in the tensor cores (CUTLASS calls the scheme ping-pong; its
//       cooperative kernels, like cuBLASLt's nvjet ones, run a tile on both warpgroups and leave
//       the tensor cores idle during the epilogue).
//
// What session 44 measured (H200, K = 768; nvjet's time over this kernel's at the full clock, where
// back to back at the power limit this kernel took 1.10-1.16x nvjet's time): the best variant,
// clusters of 1 with half staging, 0.86x at FFN 1 without GELU, 0.85-0.89x with it, 0.95x at QKV. Where the time goes
// (FFN 1 without GELU, one run): 36.6 us as built, 31.6 without the output's stores, 30.3 without
// any epilogue (nvjet's whole product: 29.7). So the products alone keep nvjet's pace, and what
// is not hidden is the stores: 25 MB of output through L2 beside the other warpgroup's operand
// reads, 32 KB from L2 a K step for a 128 x 128 tile (15 KB a MFLOP). Nsight Compute (an earlier
// variant): tensor pipe active 65 % of the cycles, L2 at 59 % of its peak; the consumers wait
// for their turn (as designed) and for full stages. Storing by ld.shared / st.global instead of
// bulk tensor stores: no better. W multicast across a cluster of 2 (24 KB a step, as nvjet's 2x1
// clusters): slower (a stage is refilled only once both CTAs' consumers have handed it back, and
// the two CTAs' turns drift apart). A wider tile per warpgroup does not fit its registers (the
// kernel's 168-register launch bound: 128 x 192 spilled). Next: multicast with the clusters'
// turns kept in step, or A shared between the two warpgroups' consecutive tiles.
enum class PingpongActivation { kNone, kGeluTanh };

struct PingpongLaunch {
  const void* a = nullptr;     // [M, K]
  const void* w = nullptr;     // [K, N]
  const void* bias = nullptr;  // [N] or null
  void* y = nullptr;           // [M, N]
  int64_t M = 0, N = 0, K = 0;
  PingpongActivation activation = PingpongActivation::kNone;
  int cluster = 2;           // CTAs sharing W by multicast: 1 or 2
  bool half_staging = true;  // six stages and the epilogue 64 rows at a time, or five and all 128
  int mode = 0;              // Params::mode
  bool lsu_store = false;    // Params::lsu_store
  int sm_count = 0;
};

constexpr int kBM = 128, kBN = 128, kBK = 64;
constexpr int kThreads = 384;
constexpr uint32_t kBoxBytes = 64 * 64 * 2, kABytes = kBM * kBK * 2, kWBytes = kBN * kBK * 2;
// A consumer warpgroup's staging boxes hold its whole tile (kHalf false, five
// stages) or 64 rows of it at a time (kHalf, six stages: the rows 64-127 wait
// until the stores of 0-63 have read them).
template <bool kHalf>
constexpr uint32_t kStagingBytes = (kHalf ? 64 : kBM) * kBN * 2;
template <bool kHalf>
constexpr int kStagesOf = kHalf ? 6 : 5;
template <bool kHalf>
constexpr size_t kSmemBytes = 1024 + size_t(kStagesOf<kHalf>) * (kABytes + kWBytes) + 2 * size_t(kStagingBytes<kHalf>);
static_assert(kSmemBytes<true> <= 227 * 1024 && kSmemBytes<false> <= 227 * 1024, "product_pingpong: shared memory");

struct Params {
  const void* bias;  // [N] or null
  int M, N, K;
  int mode;        // timing aid: 0 the product, 1 without the output's stores, 2 without the epilogue
  void* y;         // [M, N]: for lsu_store
  bool lsu_store;  // the output from the staging boxes by 16-byte ld.shared / st.global, not bulk tensor stores
};

// Rows 64·rr .. + 63 of the tile from the staging boxes at `box0` (two 64 x 64 boxes, 128-byte
// swizzled) to Y by the warpgroup's 128 threads, 16 bytes each a step, consecutive threads along a row.
__device__ __forceinline__ void store_rows_lsu(const Params& p, uint32_t box0, int m0, int n0, int rr, int lt) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int idx = i * 128 + lt, ch = idx % 8, row = idx / 8 % 64, b = idx / 512;
    const int gr = m0 + 64 * rr + row, gc = n0 + 64 * b + 8 * ch;
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(box0 + uint32_t(b) * kBoxBytes + uint32_t(row) * 128u + uint32_t((ch ^ (row & 7)) << 4)));
    if (gr < p.M && gc < p.N) *reinterpret_cast<uint4*>(static_cast<__half*>(p.y) + size_t(gr) * p.N + gc) = v;
  }
}

__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <bool kGelu>
__device__ __forceinline__ float activate(float x) {
  if constexpr (!kGelu) return x;
  return 0.5f * x * (1.f + tanh_approx(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// Rows 64·h .. 64·h + 63 of a consumer's tile (acc, kBN / 2 accumulators a
// thread) plus bias (this thread's pairs: columns 8j + 2·t4, + 1 of the tile),
// activated and rounded, into its staging boxes at `boxes` (64 columns each).
template <class T, bool kGelu>
__device__ __forceinline__ void stage_half(const float (&acc)[kBN / 2], const uint32_t (&bias)[kBN / 8], uint32_t boxes,
                                           int warp, int lane) {
#pragma unroll
  for (int j4 = 0; j4 < kBN / 32; ++j4)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      uint32_t h[4];
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) {
        const int j = 4 * j4 + jq;
        const float2 b = unpack2<T>(bias[j]);
        h[jq] = pack2<T>(activate<kGelu>(acc[4 * j + 2 * r2] + b.x), activate<kGelu>(acc[4 * j + 2 * r2 + 1] + b.y));
      }
      stmatrix_x4(swizzled_x4_at(boxes, kBoxBytes, j4, warp * 16 + 8 * r2, lane), h);
    }
}

// One arrival on the barrier at shared address `bar` in every CTA of the
// cluster (release at CTA scope: the stage's readers, wgmma, have completed).
template <int kCluster>
__device__ __forceinline__ void arrive_in_cluster(uint32_t bar) {
  if constexpr (kCluster == 1) {
    mbar_arrive(bar);
  } else {
#pragma unroll
    for (uint32_t rank = 0; rank < uint32_t(kCluster); ++rank) {
      uint32_t remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
    }
  }
}

// kCluster CTAs (1 or 2) take the row blocks of a column block together: each
// copies its own A box and 1 / kCluster of W's boxes, multicast to all of them,
// so W costs each CTA's L2 reads half as much; a stage is refilled once every
// CTA's consumer has handed it back.
template <class T, bool kGelu, int kCluster, bool kHalf>
__global__ void __launch_bounds__(kThreads, 1)
    product_pingpong_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tw,
                            const __grid_constant__ CUtensorMap ty, const Params p) {
  static_assert(kCluster == 1 || kCluster == 2, "product_pingpong: clusters of 1 or 2");
  constexpr int kStages = kStagesOf<kHalf>;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, ws = base + kStages * kABytes, stg = ws + kStages * kWBytes;
  // turn[c]: warpgroup c may start its next tile's products (the other has
  // passed all its waits on full stages for the tile before).
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages], turn[2];
  const int tid = int(threadIdx.x), wg = tid / 128;
  const int rank = int(blockIdx.x) % kCluster, cluster = int(blockIdx.x) / kCluster,
            clusters = int(gridDim.x) / kCluster;
  const int col_blocks = (p.N + kBN - 1) / kBN;
  const int tiles = ((p.M + kBM - 1) / kBM + kCluster - 1) / kCluster * col_blocks;  // the cluster's
  const int KT = (p.K + kBK - 1) / kBK;
  // The CTA's rows and columns of the cluster's tile t.
  auto origin = [&](int t, int& m0, int& n0) {
    m0 = (t / col_blocks * kCluster + rank) * kBM, n0 = t % col_blocks * kBN;
  };

  if (tid == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&ta)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tw)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&ty)) : "memory");
    for (int s = 0; s < kStages; ++s) mbar_init(smem_addr(&full[s])), mbar_init(smem_addr(&empty[s]), kCluster);
    mbar_init(smem_addr(&turn[0])), mbar_init(smem_addr(&turn[1]));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Every CTA's barriers are set before any peer copies into it or arrives on
  // them.
  if constexpr (kCluster > 1)
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\nbarrier.cluster."
        "wait.acquire.aligned;\n" ::
            : "memory");
  else
    __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      wait_prior_grids();
      const uint64_t once = l2_evict_first_policy(), again = l2_evict_last_policy();
      int it = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        int m0, n0;
        origin(t, m0, n0);
        for (int kt = 0; kt < KT; ++kt, ++it) {
          const int s = it % kStages;
          const uint32_t fb = smem_addr(&full[s]);
          if (it >= kStages) mbar_wait_parity(smem_addr(&empty[s]), ((it / kStages) & 1) ^ 1);
          mbar_expect_tx(fb, kABytes + kWBytes);
          tensor_copy_hint(as + s * kABytes, &ta, kt * kBK, m0, fb, once);
          for (int b = 0; b < kBN / 64; ++b) {
            const uint32_t dst = ws + s * kWBytes + b * kBoxBytes;
            if constexpr (kCluster == 1)
              tensor_copy_hint(dst, &tw, n0 + 64 * b, kt * kBK, fb, again);
            else if (b % kCluster == rank)
              tensor_copy_multicast(dst, &tw, n0 + 64 * b, kt * kBK, fb, (1u << kCluster) - 1);
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1, lt = tid % 128, warp = lt / 32, lane = lt % 32;
    const uint32_t boxes = stg + uint32_t(c) * kStagingBytes<kHalf>;
    const T* bias = static_cast<const T*>(p.bias);
    wait_prior_grids();
    float acc0[kBN / 2], acc1[kBN / 2];
    // Tile l of the CTA's (t = blockIdx.x + l · gridDim.x) takes stages l·KT ..
    // l·KT + KT - 1 of the ring. The warpgroups take their tiles' products
    // strictly in turn: a stage barrier tells only its phase's parity, so a
    // warpgroup that waited for a stage's next use while the other still waited
    // for its current one would take the current one's completion for its own.
    for (int l = c, t = cluster + c * clusters; t < tiles; l += 2, t += 2 * clusters) {
      if (l > 0) mbar_wait_parity(smem_addr(&turn[c]), ((l - 1) / 2) & 1);
      int m0, n0;
      origin(t, m0, n0);
      uint32_t bias_r[kBN / 8];  // loaded under the products
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        bias_r[j] = bias && col < p.N ? __ldg(reinterpret_cast<const unsigned*>(bias + col)) : 0u;
      }
      int it = l * KT;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % kStages;
        mbar_wait_parity(smem_addr(&full[s]), (it / kStages) & 1);
        wgmma_fence();
        // The two row halves' products alternate, so that no two in a row share
        // accumulators.
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t a = as + s * kABytes + k * 32;
          const uint64_t db = sw128_mn_desc(ws + s * kWBytes + k * 16 * 128, kBoxBytes);
          wgmma_ss_wide<T, kBN, true>(acc0, sw128_desc(a), db, kt > 0 || k > 0);
          wgmma_ss_wide<T, kBN, true>(acc1, sw128_desc(a + 64 * 128), db, kt > 0 || k > 0);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous step's products are done: hand its
                          // stage back
        if (kt > 0 && lt == 0) arrive_in_cluster<kCluster>(smem_addr(&empty[(it - 1) % kStages]));
      }
      // Every thread of the warpgroup is past its waits: the other's turn.
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      if (lt == 0) mbar_arrive(smem_addr(&turn[1 - c]));
      wgmma_wait<0>();
      if (lt == 0) arrive_in_cluster<kCluster>(smem_addr(&empty[(it - 1) % kStages]));

        // The epilogue, while the other warpgroup's tile runs: the staging
        // boxes are free once the stores before have read them.
#pragma unroll
      for (int h = 0; h < 2 && p.mode < 2; ++h) {
        if (h == 0 || kHalf) {
          if (lt == 0) bulk_wait_read();
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
        }
        const uint32_t half_boxes = boxes + (kHalf ? 0u : h * kStagingBytes<kHalf> / 2);
        stage_half<T, kGelu>(h ? acc1 : acc0, bias_r, half_boxes, warp, lane);
        if ((h == 1 || kHalf) && p.lsu_store) {
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
          if (p.mode == 0)
            for (int r = kHalf ? h : 0; r <= h; ++r)
              store_rows_lsu(p, boxes + (kHalf ? 0u : r * kStagingBytes<kHalf> / 2), m0, n0, r, lt);
        } else if (h == 1 || kHalf) {
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
          if (lt == 0 && p.mode == 0) {
            for (int r = kHalf ? h : 0; r <= h; ++r)
              for (int b = 0; b < kBN / 64; ++b)
                if (m0 + 64 * r < p.M && n0 + 64 * b < p.N)
                  tensor_store(&ty, n0 + 64 * b, m0 + 64 * r,
                               boxes + (kHalf ? 0u : r * kStagingBytes<kHalf> / 2) + uint32_t(b) * kBoxBytes);
            bulk_commit();
          }
        }
      }
    }
    // The CTA's shared memory must outlive the stores' reads of it.
    if (lt == 0) bulk_wait_read();
  }
  __syncwarp();
  // Nor may a CTA leave while a peer may still copy into it or arrive on its
  // barriers.
  if constexpr (kCluster > 1)
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\nbarrier.cluster."
        "wait.acquire.aligned;\n" ::
            : "memory");
}

template <class T, bool kGelu, int kCluster, bool kHalf>
cudaError_t launch(const PingpongLaunch& a, cudaStream_t stream) {
  auto* kernel = product_pingpong_kernel<T, kGelu, kCluster, kHalf>;
  constexpr size_t kSmem = kSmemBytes<kHalf>;
  static const cudaError_t raised =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem));
  if (raised != cudaSuccess) return raised;
  CUtensorMap ta{}, tw{}, ty{};
  if (!encode_tensor_map(&ta, ingot::DType::kFloat16, a.a, a.M, a.K, a.K, kBM, kBK, true) ||
      !encode_tensor_map(&tw, ingot::DType::kFloat16, a.w, a.K, a.N, a.N, kBK, 64, true) ||
      !encode_tensor_map(&ty, ingot::DType::kFloat16, a.y, a.M, a.N, a.N, 64, 64, true))
    return cudaErrorInvalidValue;
  Params p{};
  p.bias = a.bias, p.M = int(a.M), p.N = int(a.N), p.K = int(a.K), p.mode = a.mode;
  p.y = a.y, p.lsu_store = a.lsu_store;
  const int64_t cluster_tiles = ((a.M + kBM - 1) / kBM + kCluster - 1) / kCluster * ((a.N + kBN - 1) / kBN);
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (kCluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = kCluster, attrs[n].val.clusterDim.y = 1, attrs[n++].val.clusterDim.z = 1;
  }
  if (dependent_launch_enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(std::min<int64_t>(cluster_tiles, a.sm_count / kCluster) * kCluster));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, ta, tw, ty, p);
}

template <class T, int kCluster, bool kHalf>
cudaError_t launch_staged(const PingpongLaunch& a, cudaStream_t stream) {
  return a.activation == PingpongActivation::kNone ? launch<T, false, kCluster, kHalf>(a, stream)
                                                   : launch<T, true, kCluster, kHalf>(a, stream);
}

// The kernel for `a` (float16 operands; 16-byte aligned tensors, N and K
// multiples of 8).
cudaError_t launch_product_pingpong(const PingpongLaunch& a, cudaStream_t stream) {
  using T = __half;
  if (a.cluster == 2)
    return a.half_staging ? launch_staged<T, 2, true>(a, stream) : launch_staged<T, 2, false>(a, stream);
  return a.half_staging ? launch_staged<T, 1, true>(a, stream) : launch_staged<T, 1, false>(a, stream);
}

struct Shape {
  const char* name;
  int M, N, K;
  bool gelu;
};

struct Sustained {
  float us, mj, mhz;
};

// `launch` captured 20 times into a graph, replayed back to back for a second
// and then `seconds` more, timed by events around the timed replays.
template <class F>
Sustained sustained(cudaStream_t s, float seconds, F launch) {
  constexpr int kReps = 20;
  cudaGraphExec_t ge = capture_launches(s, kReps, launch);
  auto run_for = [&](float sec) {
    int replays = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<float>(sec);
    while (std::chrono::steady_clock::now() < end) {
      for (int i = 0; i < 50; ++i) CK(cudaGraphLaunch(ge, s));
      replays += 50;
      CK(cudaStreamSynchronize(s));
    }
    return replays;
  };
  run_for(1.f);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto monitor = ingot::cuda::start_clock_monitor(0, std::chrono::milliseconds(20));
  CK(cudaEventRecord(e0, s));
  const int replays = run_for(seconds);
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  const ingot::DeviceClockReport r = monitor ? (*monitor)->stop() : ingot::DeviceClockReport{};
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(ge));
  const float launches = float(replays) * kReps;
  return {ms * 1000.f / launches, r.energy_j >= 0 ? float(r.energy_j * 1000.0 / launches) : -1.f,
          float(r.sm_mhz_median)};
}

// Which variants to run and how (main's options).
struct Options {
  float seconds = 1.5f;
  int rounds = 2, variant = -1, mode = 0;
  bool lsu_store = false;
};

bool run_shape(const Shape& sh, cudaStream_t s, ingot::cuda::CudaHandles& handles, const Options& o) {
  const int M = sh.M, N = sh.N, K = sh.K;
  std::mt19937 rng(unsigned(M * 7 + N * 3 + K));
  std::normal_distribution<float> nd(0.f, 1.f);
  // BERT's magnitudes: activations ~1 (a LayerNorm's output), weights N(0,
  // 0.02).
  std::vector<__half> A(size_t(M) * K), W(size_t(K) * N), B(N);
  for (auto& v : A) v = __float2half(nd(rng));
  for (auto& v : W) v = __float2half(nd(rng) * 0.02f);
  for (auto& v : B) v = __float2half(nd(rng) * 0.02f);
  __half *dA = upload(A), *dW = upload(W), *dB = upload(B), *ref, *mine;
  CK(cudaMalloc(&ref, size_t(M) * N * 2));
  CK(cudaMalloc(&mine, size_t(M) * N * 2));

  ingot::cuda::GemmDesc desc;
  desc.m = M, desc.n = N, desc.k = K, desc.dtype = ingot::DType::kFloat16, desc.bias = dB;
  if (sh.gelu) desc.activation = ingot::cuda::GemmActivation::kGeluTanh;
  auto baseline = [&] {
    const ingot::Status st = ingot::cuda::lt_gemm(handles, desc, dA, dW, ref);
    if (!st.is_ok()) {
      printf("lt_gemm: %s\n", st.message().c_str());
      exit(1);
    }
  };
  PingpongLaunch pp;
  pp.a = dA, pp.w = dW, pp.bias = dB, pp.y = mine;
  pp.M = M, pp.N = N, pp.K = K, pp.sm_count = handles.sm_count;
  pp.activation = sh.gelu ? PingpongActivation::kGeluTanh : PingpongActivation::kNone;
  auto own = [&] { CK(launch_product_pingpong(pp, s)); };
  baseline();
  CK(cudaStreamSynchronize(s));
  const std::vector<__half> want = download(ref, size_t(M) * N);
  auto exact = [&](int r, int n) {
    double x = __half2float(B[n]);
    for (int k = 0; k < K; ++k) x += double(__half2float(A[size_t(r) * K + k])) * __half2float(W[size_t(k) * N + n]);
    if (sh.gelu) x = 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
    return x;
  };
  bool ok = true;
  for (const int variant : {0, 1, 2, 3}) {
    if (o.variant >= 0 && variant != o.variant) continue;
    const int cluster = 1 + variant % 2;
    pp.cluster = cluster, pp.half_staging = variant / 2, pp.mode = 0, pp.lsu_store = o.lsu_store;
    CK(cudaMemset(mine, 0xFF, size_t(M) * N * 2));  // NaN: an unwritten element fails the check
    own();
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    const std::vector<__half> got = download(mine, size_t(M) * N);
    double worst = 0, err_own = 0, err_lt = 0;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const float x = __half2float(got[i]), y = __half2float(want[i]);
      if (!(std::fabs(x - y) <= 2.f * std::max(std::fabs(y), 1.f) / 1024.f)) ++bad;
      worst = x == x ? std::max(worst, double(std::fabs(x - y))) : INFINITY;
    }
    for (int r = 0; r < M; r += 97)
      for (int n = 0; n < N; n += 7) {
        const double e = exact(r, n);
        err_own = std::max(err_own, std::fabs(__half2float(got[size_t(r) * N + n]) - e));
        err_lt = std::max(err_lt, std::fabs(__half2float(want[size_t(r) * N + n]) - e));
      }
    const double flop = 2.0 * M * N * K;
    printf(
        "%-11s %5dx%5dx%5d variant %d (cluster %d, %s staging), mode %d: max |own - cuBLASLt| %.3g "
        "(%zu beyond 2 ulps); vs float64 own %.3g, cuBLASLt %.3g%s\n",
        sh.name, M, N, K, variant, cluster, pp.half_staging ? "half" : "full", o.mode, worst, bad, err_own, err_lt,
        bad ? "  WRONG" : "");
    pp.mode = o.mode;
    for (int round = 0; round < o.rounds; ++round) {
      const float lt_us = chain_us(s, 10, baseline), own_us = chain_us(s, 10, own);
      const Sustained lt = sustained(s, o.seconds, baseline), mine_s = sustained(s, o.seconds, own);
      printf(
          "  round %d  full clock: cuBLASLt %6.2f us (%3.0f TF/s)  own "
          "%6.2f us (%3.0f TF/s) %.3fx | back to back: "
          "cuBLASLt %6.2f us %.3f mJ (%.3f pJ/FLOP) %4.0f MHz  own %6.2f us "
          "%.3f mJ (%.3f pJ/FLOP) %4.0f MHz  %.3fx\n",
          round, lt_us, flop / lt_us / 1e6, own_us, flop / own_us / 1e6, own_us / lt_us, lt.us, lt.mj,
          lt.mj * 1e9 / flop, lt.mhz, mine_s.us, mine_s.mj, mine_s.mj * 1e9 / flop, mine_s.mhz, mine_s.us / lt.us);
    }
    ok &= bad == 0;
  }
  for (__half* p : {dA, dW, dB, ref, mine}) CK(cudaFree(p));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines survive a timeout's kill
  const char* only = nullptr;
  int rows = 4096;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc)
      rows = std::atoi(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      o.seconds = float(std::atof(argv[++i]));
    else if (a == "--rounds" && i + 1 < argc)
      o.rounds = std::atoi(argv[++i]);
    else if (a == "--variant" && i + 1 < argc)
      o.variant = std::atoi(argv[++i]);
    else if (a == "--lsu-store")
      o.lsu_store = true;
    else if (a == "--mode" && i + 1 < argc)
      o.mode = std::atoi(argv[++i]);
    else
      only = argv[i];
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ingot::cuda::CudaHandles handles;
  handles.stream = s;
  if (cublasLtCreate(&handles.lt) != CUBLAS_STATUS_SUCCESS) {
    printf("cublasLtCreate failed\n");
    return 1;
  }
  int dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&handles.sm_count, cudaDevAttrMultiProcessorCount, dev));
  void* ws = nullptr;
  CK(cudaMalloc(&ws, ingot::cuda::kGemmWorkspaceBytes));
  handles.gemm_workspace = ws, handles.gemm_workspace_bytes = ingot::cuda::kGemmWorkspaceBytes;
  const Shape shapes[] = {
      {"ffn1", rows, 3072, 768, true}, {"ffn1_nogelu", rows, 3072, 768, false}, {"qkv", rows, 2304, 768, false},
      {"out", rows, 768, 768, false},  {"ffn2", rows, 768, 3072, false},
  };
  bool ok = true;
  for (const Shape& sh : shapes)
    if (!only || std::string(only) == sh.name) ok &= run_shape(sh, s, handles, o);
  return ok ? 0 : 1;
}
