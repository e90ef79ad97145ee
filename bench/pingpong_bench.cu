// A ping-pong product of ingot's own against the engine's cuBLASLt call (lt_gemm) at BERT-base's
// batch-32 shapes, at the full clock and back to back at the board's power limit. A prototype, not
// in the engine: developer session 44 (docs/PERFORMANCE.md) asked whether hiding each tile's
// epilogue under the next tile's products saves the energy that cuBLASLt's K = 768 products spend
// beyond its K = 3072 one (1.19-1.45 against 1.07-1.21 pJ a FLOP back to back). Session 46 took
// FFN 1 with GELU from session 44's 0.81-0.89x of cuBLASLt's speed to 0.88-0.97x, session 47 to
// about even back to back (0.98-1.02x; see the kernel's notes): not faster, so not in the engine.
//
//   out = act(A·W + bias)   A [M, K], W [K, N] as the graph stores it, float16, fp32
//                           accumulation; act: none or GELU's tanh form on the rounded float16
//                           pair (tanh.approx.f16x2; within 2 float16 ulps of cuBLASLt's GELU)
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
//                  [--lsu-store] [--trace] [--pace NS]
//   SHAPE: ffn1 (GELU), ffn1_nogelu, qkv, out, ffn2 (all by default); V: 0-6, the kernel's variants
//   (0-3: 128 wide, clusters of 1 and 2, full and half staging; 4: 192 wide, self-fed, four stages
//   of K 64; 5: the same with eight stages of K 32; 6: variant 4 with W multicast across clusters
//   of 2; all by default); --mode 1 times the kernel without its output's stores, 2 without its
//   epilogue (timing aids: outputs checked in mode 0 first); --lsu-store: the output by 16-byte shared
//   loads and global stores instead of bulk tensor stores (128 wide); --trace: before the timing,
//   CTA 0's clock at each tile's turn, products done and epilogue done, and every CTA's start and
//   end (%globaltimer) of one launch; --pace NS: a pause of NS after each 8 columns' activation in
//   the epilogue (a timing aid). --rounds 0 checks and traces without timing. Exits 1 when an
//   output is wrong.
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

// The kernel: persistent, one CTA a multiprocessor at most, 128 x kBN tiles (kBN 128 or 192) taken
// in turn by two consumer warpgroups.
//
//   the copier (128 wide: warpgroup 0's thread 0; 192 wide: no such warpgroup, see kThreadsOf: the
//       consumer that hands a stage back refills it, thread 0 the first kStages): the copy engine's
//       tensor copies of A's [128 x 64] box and W's kBN / 64 [64 x 64] boxes a K step into kStages
//       128-byte-swizzled stages (A evict-first, W evict-last in L2), tile after tile of the
//       CTA's (tiles blockIdx.x, + gridDim.x, ...);
//   the consumer warpgroups: the CTA's even and odd tiles, a whole tile each (two wgmma m64nNk16 a
//       16 of K: rows 0-63 and 64-127, kBN accumulators a thread), then the tile's epilogue: bias
//       (from shared memory), activation, one rounding (pack_tile), stmatrix into the
//       warpgroup's own staging boxes, bulk tensor stores. The stages go round in tile order, so while one warpgroup runs its epilogue the
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
// the two CTAs' turns drift apart).
//
// Session 46 (H200, FFN 1 with GELU, this kernel's time over cuBLASLt's, full clock; --trace in
// cycles): with the bias loaded in the epilogue (registers for a 192-wide tile) 1.16-1.45x, since
// each of its loads from L2 waited ~1,000 cycles under the products' traffic (the bias now comes
// in before the products and waits in shared memory); a copier computing each copy's tile by
// integer division instead of counting, 1.3-1.5x. Nsight Compute: nvjet here is
// nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_bias_NNT (256 x 128, 4 stages, clusters of 2,
// cooperative), its L2 at 35 % of peak against this kernel's 63 %; this kernel's consumers wait
// mostly on full stages. What the trace showed: a 128 x 192 tile's products take 11-13k cycles
// (768 a K step at the tensor cores' peak: ~77 %), and its GELU epilogue took 17-18k as written
// (accumulators in registers, GELU in float, one element's chain at a time with 192 accumulators
// live; 19 % of the samples waiting for instruction fetch), so each epilogue outlasted the other
// warpgroup's products and the last one (10k+) ended the kernel. Packing the whole tile into
// float16 pairs first and applying GELU in f16x2 brought it to 6.5k, under the products: 0.88-0.97x
// of cuBLASLt's speed, 0.95-0.97x back to back. Tried and dropped: GELU as a rolled pass over the
// staged values (12-18k: the pass's shared-memory round trips wait behind the products' traffic),
// ex2 + rcp instead of tanh (24k), five stages with one staging buffer shared by the warpgroups
// (products slower, 12-13.7k). Not what stops the products: shared-memory or L2 bandwidth
// (wgmma_rate_bench: wgmma keeps 97 % of its peak beside 55-60 bytes a cycle of copies from L2,
// more than this tile's 53); the consumers wait for full stages: the refills' latency (~2,600
// cycles under load) over the ~80 KB the ring keeps in flight.
//
// Session 47 (same measures): K steps of 32 (variant 5, eight 20 KB stages, so that the consumer
// holds 40 KB of the ring instead of 80) took a tile's products to 16-17.6k cycles, 1.22-1.45x
// cuBLASLt's time: smaller stages cost more than they hide. The --lsu-store path, compiled into the
// 192-wide kernels though it is not used there, made ptxas spill 84-104 bytes at 255 registers
// (4 without it): out of them now, 0.94-1.09x at the full clock, 0.98-1.02x back to back. The bias
// now starts the accumulators (cp.async into shared memory before the turn; 192 additions a
// thread fewer in the epilogue, 7.3k -> 6.7-6.9k cycles) and the L2 policies are made once: the
// products beside the other warpgroup's epilogue stay at 12.3k. Where a tile's products lose
// (cycles, CTA 0): 10.5k alone (--mode 2; 88 % of the peak; the kernel 0.81-0.87x of cuBLASLt's
// time), 11.7-11.8k beside an epilogue without its stores (--mode 1), 12.3k beside the whole
// epilogue; without GELU 10.5k / 10.9k / 11.2k. So GELU's math beside the products costs them
// ~0.9k cycles a tile, the packing and stmatrix ~0.4k, the stores ~0.5k. W multicast across
// clusters of 2 (variant 6: 28 KB from L2 a K step instead of 40), each consumer refilling a
// stage once both CTAs' consumers have handed it back: waiting for that at the hand-back took a
// tile's products to 12.8-14.4k beside the epilogue (the kernel without it, --mode 2, 34.5 us
// against variant 4's 26.8); refilling one K step later, to 11.7-11.9k with --mode 2 (a shorter
// lead) against 10.5k. A copying warp instead (288 threads) cannot hold a 128 x 192 tile: ptxas
// gives __maxnreg__(224) and the launch fails for want of registers (a sub-partition's third warp).
// --pace NS (a pause after each 8 columns' activation) spreads the epilogue out: the products
// beside it take 11.5-11.9k cycles a tile at 100 ns (epilogue 10.6-11.6k) and 10.8-11.4k at 200
// (epilogue 15.8k, longer than the products), against 12.0-12.1k unpaced: the cost to the products
// follows the epilogue's density. The kernel was slower at every pace (the last epilogue longer).
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
  long long* trace = nullptr;  // Params::trace
  unsigned pace_ns = 0;        // Params::pace_ns
  unsigned long long* span = nullptr;  // Params::span
  bool wide = false;         // 128 x 192 tiles a warpgroup (self-fed, half staging), not 128 x 128
  int step = 64;             // the K step a stage holds (wide only): 64 (four stages) or 32 (eight)
  int sm_count = 0;
};

// kStep: the K step a stage holds, 64 (A's box 128-byte swizzled) or 32 (64-byte swizzled; W's
// boxes [32 x 64]): a consumer holds about two stages of its ring at a time (the one it multiplies
// and the one before until those products are done), so halving the stage keeps more of the ring
// in flight (session 46: the copies' ~2,600 cycles of latency under load bound the products).
constexpr int kBM = 128;
constexpr uint32_t kBoxBytes = 64 * 64 * 2;  // a staging box: 64 x 64
template <int kStep>
constexpr uint32_t kABytesOf = kBM * kStep * 2;
template <int kStep>
constexpr uint32_t kWBoxBytesOf = kStep * 64 * 2;
// A consumer warpgroup's tile is 128 x kBN: 128 or 192 accumulators a thread.
template <int kBN, int kStep>
constexpr uint32_t kWBytes = kBN * kStep * 2;
// 128 wide: a producer warpgroup and two consumer warpgroups, 384 threads, the consumers raised to
// 232 registers by setmaxnreg. 192 wide: the two consumer warpgroups alone, 256 threads, each
// refilling the stages it hands back: ptxas allocates registers under the launch bound whatever
// setmaxnreg raises at run time (168 for 384 threads, and for 288, since each of the four SM
// sub-partitions holds a third warp: __maxnreg__(224) compiles for 288 and does not launch), and
// 128 x 192 spilled there.
template <int kBN>
constexpr int kThreadsOf = kBN == 192 ? 256 : 384;
// A consumer warpgroup's staging boxes hold its whole tile (kHalf false, five
// stages) or 64 rows of it at a time (kHalf, six stages at kBN 128, four at 192:
// the rows 64-127 wait until the stores of 0-63 have read them).
template <bool kHalf, int kBN>
constexpr uint32_t kStagingBytes = (kHalf ? 64 : kBM) * kBN * 2;
template <bool kHalf, int kBN, int kStep>
constexpr int kStagesOf = kBN == 192 ? 4 * 64 / kStep : kHalf ? 6 : 5;
template <bool kHalf, int kBN, int kStep>
constexpr size_t kSmemBytes = 1024 + size_t(kStagesOf<kHalf, kBN, kStep>) * (kABytesOf<kStep> + kWBytes<kBN, kStep>) +
                              2 * size_t(kStagingBytes<kHalf, kBN>);
static_assert(kSmemBytes<true, 128, 64> <= 227 * 1024 && kSmemBytes<false, 128, 64> <= 227 * 1024 &&
                  kSmemBytes<true, 192, 64> <= 227 * 1024 && kSmemBytes<true, 192, 32> <= 227 * 1024,
              "product_pingpong: shared memory");

struct Params {
  const void* bias;  // [N] or null
  int M, N, K;
  int mode;        // timing aid: 0 the product, 1 without the output's stores, 2 without the epilogue
  void* y;         // [M, N]: for lsu_store
  bool lsu_store;  // the output from the staging boxes by 16-byte ld.shared / st.global, not bulk tensor stores
  long long* trace;  // timing aid: CTA 0's clock at each tile's turn, products done, epilogue done
  unsigned long long* span;  // timing aid: each CTA's %globaltimer at its first turn and at its end [2 · grid]
  unsigned pace_ns;  // timing aid: a pause after each 8 columns' activation, spreading the epilogue out
};

// Rows 64·rr .. + 63 of the tile from the staging boxes at `box0` (two 64 x 64 boxes, 128-byte
// swizzled) to Y by the warpgroup's 128 threads, 16 bytes each a step, consecutive threads along a row.
template <int kBN>
__device__ __forceinline__ void store_rows_lsu(const Params& p, uint32_t box0, int m0, int n0, int rr, int lt) {
#pragma unroll
  for (int i = 0; i < kBN / 16; ++i) {
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

// GELU's tanh form on a float16 pair, all of it in f16x2: five multiply(-add)s and one tanh for
// two elements (the pair is rounded once first: ~1 ulp more than GELU on the float sum).
__device__ __forceinline__ uint32_t gelu_h2(uint32_t bits) {
  const __half2 x = *reinterpret_cast<const __half2*>(&bits);
  const __half2 u =
      __hmul2(x, __hfma2(__hmul2(x, x), __float2half2_rn(0.7978845608f * 0.044715f), __float2half2_rn(0.7978845608f)));
  uint32_t t;
  asm("tanh.approx.f16x2 %0, %1;" : "=r"(t) : "r"(*reinterpret_cast<const uint32_t*>(&u)));
  const __half2 hx = __hmul2(x, __float2half2_rn(0.5f));
  const __half2 y = __hfma2(hx, *reinterpret_cast<const __half2*>(&t), hx);
  return *reinterpret_cast<const uint32_t*>(&y);
}


// The warpgroup's tile (acc0: rows 0-63, acc1: 64-127, kBN / 2 accumulators a thread each, the
// bias already in them: the products started from it), activated and rounded into pairs:
// out[(h · kBN / 8 + j) · 2 + r2] holds row half h, column pair j (columns 8j + 2·t4, + 1), row
// 8·r2 of the thread's 16. All of it before any staging, so that the accumulators' registers free up for the
// activation's independent chains (with half a tile's accumulators still live, GELU ran one chain
// at a time) and no activation waits behind the first half's store.
template <class T, bool kGelu, int kBN>
__device__ __forceinline__ void pack_tile(const float (&acc0)[kBN / 2], const float (&acc1)[kBN / 2],
                                          uint32_t (&out)[kBN / 2], unsigned pace_ns) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    if (pace_ns) __nanosleep(pace_ns);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int r2 = 0; r2 < 2; ++r2) {
        const float* acc = h ? acc1 : acc0;
        const float x0 = acc[4 * j + 2 * r2], x1 = acc[4 * j + 2 * r2 + 1];
        uint32_t& o = out[(h * (kBN / 8) + j) * 2 + r2];
        if constexpr (kGelu && std::is_same_v<T, __half>)
          o = gelu_h2(pack2<T>(x0, x1));
        else
          o = pack2<T>(activate<kGelu>(x0), activate<kGelu>(x1));
      }
  }
}

// Row half h of pack_tile's pairs into the staging boxes at `boxes` (64 columns each).
template <int kBN>
__device__ __forceinline__ void stage_half(const uint32_t (&packed)[kBN / 2], int h, uint32_t boxes, int warp, int lane) {
#pragma unroll
  for (int j4 = 0; j4 < kBN / 32; ++j4)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      uint32_t v[4];
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) v[jq] = packed[(h * (kBN / 8) + 4 * j4 + jq) * 2 + r2];
      stmatrix_x4(swizzled_x4_at(boxes, kBoxBytes, j4, warp * 16 + 8 * r2, lane), v);
    }
}

// The descriptor of A's K-major rows at `addr`: 128-byte swizzled (kStep 64) or 64-byte swizzled
// (kStep 32). A step of 16 of K is addr + 32 either way.
template <int kStep>
__device__ __forceinline__ uint64_t a_desc(uint32_t addr) {
  if constexpr (kStep == 64) return sw128_desc(addr);
  return sw64_desc(addr);
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
template <class T, bool kGelu, int kCluster, bool kHalf, int kBN, int kStep>
__global__ void __launch_bounds__(kThreadsOf<kBN>, 1)
    product_pingpong_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tw,
                            const __grid_constant__ CUtensorMap ty, const Params p) {
  static_assert(kCluster == 1 || kCluster == 2, "product_pingpong: clusters of 1 or 2");
  // Self-fed (192 wide): no producer; the warpgroup whose products hand a stage back refills it.
  // In a cluster of 2 its refill of a stage waits until the peer's consumer has handed the stage
  // back too (the refill's W boxes land in both CTAs).
  constexpr bool kSelfFed = kThreadsOf<kBN> == 256;
  constexpr int kStages = kStagesOf<kHalf, kBN, kStep>, kBK = kStep;
  constexpr uint32_t kABytes = kABytesOf<kStep>, kWBytes = ::kWBytes<kBN, kStep>, kWBoxBytes = kWBoxBytesOf<kStep>;
  constexpr uint32_t kStagingBytes = ::kStagingBytes<kHalf, kBN>;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, ws = base + kStages * kABytes, stg = ws + kStages * kWBytes;
  // turn[c]: warpgroup c may start its next tile's products (the other has
  // passed all its waits on full stages for the tile before).
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages], turn[2];
  __shared__ __align__(16) T bias_tile[2][kBN];  // each consumer warpgroup's tile's bias
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
  // K step kt of the tile at (m0, n0) into stage s (no divisions: a self-fed consumer's thread
  // runs this between its products).
  const uint64_t once = l2_evict_first_policy(), again = l2_evict_last_policy();
  auto fill = [&](int s, int kt, int m0, int n0) {
    const uint32_t fb = smem_addr(&full[s]);
    mbar_expect_tx(fb, kABytes + kWBytes);
    tensor_copy_hint(as + s * kABytes, &ta, kt * kBK, m0, fb, once);
    for (int b = 0; b < kBN / 64; ++b) {
      const uint32_t dst = ws + s * kWBytes + b * kWBoxBytes;
      if constexpr (kCluster == 1)
        tensor_copy_hint(dst, &tw, n0 + 64 * b, kt * kBK, fb, again);
      else if (b % kCluster == rank)
        tensor_copy_multicast(dst, &tw, n0 + 64 * b, kt * kBK, fb, (1u << kCluster) - 1);
    }
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

  if (!kSelfFed && wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      wait_prior_grids();
      int it = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        int m0, n0;
        origin(t, m0, n0);
        for (int kt = 0; kt < KT; ++kt, ++it) {
          if (it >= kStages) mbar_wait_parity(smem_addr(&empty[it % kStages]), ((it / kStages) & 1) ^ 1);
          fill(it % kStages, kt, m0, n0);
        }
      }
    }
  } else {
    if constexpr (!kSelfFed) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = kSelfFed ? wg : wg - 1, lt = tid % 128, warp = lt / 32, lane = lt % 32;
    // Self-fed: the ring's first stages come from thread 0, each later one from the thread that
    // hands its stage back (its products done: wgmma_wait), so no stage is overwritten while read.
    // The launch asks for KT > kStages, so a refill is of this tile or the CTA's next.
    if constexpr (kSelfFed) {
      if (tid == 0) {
        wait_prior_grids();
        int m0, n0;
        origin(cluster, m0, n0);
        for (int s = 0; s < kStages; ++s) fill(s, s, m0, n0);
      }
    }
    int m0 = 0, n0 = 0, next_m0 = 0, next_n0 = 0;
    bool has_next = false;  // the CTA has a tile after this one
    // The ring's copy q (stage q % kStages, K step kt of this tile) is done with: refill it with the ring's
    // copy kStages on, or hand it to the producer. In a cluster a self-fed consumer refills a
    // stage once both CTAs' consumers are done with it, one K step after its own hand-back (by
    // then the peer's has come, so the products do not wait for it; session 47: waiting at once
    // took the kernel without its epilogue from 26.8 to 34.5 us).
    auto refill = [&](int kt, int q) {
      if (kt + kStages >= KT && !has_next) return;
      const int s = q % kStages;
      if constexpr (kCluster > 1) mbar_wait_parity(smem_addr(&empty[s]), (q / kStages) & 1);
      if (kt + kStages < KT)
        fill(s, kt + kStages, m0, n0);
      else
        fill(s, kt + kStages - KT, next_m0, next_n0);
    };
    auto hand_back = [&](int kt, int q) {
      if constexpr (kSelfFed) {
        if constexpr (kCluster > 1) {
          arrive_in_cluster<kCluster>(smem_addr(&empty[q % kStages]));
          if (kt > 0) refill(kt - 1, q - 1);
          if (kt == KT - 1) refill(kt, q);  // the tile's last: its epilogue can wait
        } else {
          refill(kt, q);
        }
      } else {
        arrive_in_cluster<kCluster>(smem_addr(&empty[q % kStages]));
      }
    };
    const uint32_t boxes = stg + uint32_t(c) * kStagingBytes;
    const T* bias = static_cast<const T*>(p.bias);
    wait_prior_grids();
    float acc0[kBN / 2], acc1[kBN / 2];
    // Tile l of the CTA's (t = blockIdx.x + l · gridDim.x) takes stages l·KT ..
    // l·KT + KT - 1 of the ring. The warpgroups take their tiles' products
    // strictly in turn: a stage barrier tells only its phase's parity, so a
    // warpgroup that waited for a stage's next use while the other still waited
    // for its current one would take the current one's completion for its own.
    for (int l = c, t = cluster + c * clusters; t < tiles; l += 2, t += 2 * clusters) {
      origin(t, m0, n0);
      has_next = t + clusters < tiles;
      if (kSelfFed && has_next) origin(t + clusters, next_m0, next_n0);
      // The accumulators start at the bias, so that the epilogue adds none (192 additions a thread
      // fewer beside the other warpgroup's products): 16 bytes a thread of the first kBN / 8 by
      // cp.async into shared memory (zeros past N or without a bias), then each thread's columns,
      // before the turn (the warpgroup's epilogue before ends thousands of cycles before the other's
      // products do). The warpgroup's reads of bias_tile[c] for its tile before are behind the
      // barriers of that tile's epilogue. This also ends the tile before's accumulators, which the
      // wgmma operands read ("+f"): with no new value here ptxas kept them live through that
      // epilogue (192 + 96 registers at 192 wide: 504 bytes of spills).
      if (lt < kBN / 8) {
        const bool in = bias && n0 + 8 * lt < p.N;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(&bias_tile[c][8 * lt])),
                     "l"(in ? bias + n0 + 8 * lt : bias), "r"(in ? 16 : 0)
                     : "memory");
        asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
      }
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const float2 b = unpack2<T>(*reinterpret_cast<const uint32_t*>(&bias_tile[c][8 * j + 2 * (lane % 4)]));
#pragma unroll
        for (int r2 = 0; r2 < 2; ++r2)
          acc0[4 * j + 2 * r2] = acc1[4 * j + 2 * r2] = b.x, acc0[4 * j + 2 * r2 + 1] = acc1[4 * j + 2 * r2 + 1] = b.y;
      }
      if (l > 0) mbar_wait_parity(smem_addr(&turn[c]), ((l - 1) / 2) & 1);
      const bool stamp = p.trace && blockIdx.x == 0 && lt == 0 && l < 16;
      if (stamp) p.trace[3 * l] = clock64();
      if (p.span && l == 0 && lt == 0) p.span[2 * blockIdx.x] = global_ns();
      int it = l * KT;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % kStages;
        mbar_wait_parity(smem_addr(&full[s]), (it / kStages) & 1);
        wgmma_fence();
        // The two row halves' products alternate, so that no two in a row share
        // accumulators.
#pragma unroll
        for (int k = 0; k < kStep / 16; ++k) {
          const uint32_t a = as + s * kABytes + k * 32;
          const uint64_t db = sw128_mn_desc(ws + s * kWBytes + k * 16 * 128, kWBoxBytes);
          wgmma_ss_wide<T, kBN, true>(acc0, a_desc<kStep>(a), db);
          wgmma_ss_wide<T, kBN, true>(acc1, a_desc<kStep>(a + 64 * kStep * 2), db);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous step's products are done: hand its
                          // stage back
        if (kt > 0 && lt == 0) hand_back(kt - 1, it - 1);
      }
      // Every thread of the warpgroup is past its waits: the other's turn.
      asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
      if (lt == 0) mbar_arrive(smem_addr(&turn[1 - c]));
      wgmma_wait<0>();
      if (lt == 0) hand_back(KT - 1, it - 1);
      if (stamp) p.trace[3 * l + 1] = clock64();
      uint32_t packed[kBN / 2];
      if (p.mode < 2) pack_tile<T, kGelu, kBN>(acc0, acc1, packed, p.pace_ns);

        // The epilogue, while the other warpgroup's tile runs: the staging
        // boxes are free once the stores before have read them.
#pragma unroll
      for (int h = 0; h < 2 && p.mode < 2; ++h) {
        if (h == 0 || kHalf) {
          if (lt == 0) bulk_wait_read();
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
        }
        const uint32_t half_boxes = boxes + (kHalf ? 0u : h * kStagingBytes / 2);
        stage_half<kBN>(packed, h, half_boxes, warp, lane);
        if ((h == 1 || kHalf) && kBN == 128 && p.lsu_store) {  // (192 wide: this path made ptxas spill)
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
          if (p.mode == 0)
            for (int r = kHalf ? h : 0; r <= h; ++r)
              store_rows_lsu<kBN>(p, boxes + (kHalf ? 0u : r * kStagingBytes / 2), m0, n0, r, lt);
        } else if (h == 1 || kHalf) {
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
          if (lt == 0 && p.mode == 0) {
            for (int r = kHalf ? h : 0; r <= h; ++r)
              for (int b = 0; b < kBN / 64; ++b)
                if (m0 + 64 * r < p.M && n0 + 64 * b < p.N)
                  tensor_store(&ty, n0 + 64 * b, m0 + 64 * r,
                               boxes + (kHalf ? 0u : r * kStagingBytes / 2) + uint32_t(b) * kBoxBytes);
            bulk_commit();
          }
        }
      }
      if (stamp) p.trace[3 * l + 2] = clock64();
    }
    // The CTA's shared memory must outlive the stores' reads of it.
    if (lt == 0) bulk_wait_read();
    if (p.span && lt == 0) atomicMax(&p.span[2 * blockIdx.x + 1], global_ns());
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

template <class T, bool kGelu, int kCluster, bool kHalf, int kBN, int kStep>
cudaError_t launch(const PingpongLaunch& a, cudaStream_t stream) {
  auto* kernel = product_pingpong_kernel<T, kGelu, kCluster, kHalf, kBN, kStep>;
  constexpr size_t kSmem = kSmemBytes<kHalf, kBN, kStep>;
  static const cudaError_t raised =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem));
  if (raised != cudaSuccess) return raised;
  CUtensorMap ta{}, tw{}, ty{};
  constexpr CUtensorMapSwizzle kASwizzle = kStep == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  if (!encode_tensor_map(&ta, ingot::DType::kFloat16, a.a, a.M, a.K, a.K, kBM, kStep, kASwizzle) ||
      !encode_tensor_map(&tw, ingot::DType::kFloat16, a.w, a.K, a.N, a.N, kStep, 64, true) ||
      !encode_tensor_map(&ty, ingot::DType::kFloat16, a.y, a.M, a.N, a.N, 64, 64, true))
    return cudaErrorInvalidValue;
  if (kThreadsOf<kBN> == 256 && (a.K + kStep - 1) / kStep <= kStagesOf<kHalf, kBN, kStep>) return cudaErrorInvalidValue;
  Params p{};
  p.bias = a.bias, p.M = int(a.M), p.N = int(a.N), p.K = int(a.K), p.mode = a.mode;
  p.y = a.y, p.lsu_store = a.lsu_store, p.trace = a.trace, p.span = a.span, p.pace_ns = a.pace_ns;
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
  config.blockDim = dim3(kThreadsOf<kBN>);
  config.dynamicSmemBytes = kSmem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, ta, tw, ty, p);
}

template <class T, int kCluster, bool kHalf, int kBN = 128, int kStep = 64>
cudaError_t launch_staged(const PingpongLaunch& a, cudaStream_t stream) {
  return a.activation == PingpongActivation::kNone ? launch<T, false, kCluster, kHalf, kBN, kStep>(a, stream)
                                                   : launch<T, true, kCluster, kHalf, kBN, kStep>(a, stream);
}

// The kernel for `a` (float16 operands; 16-byte aligned tensors, N and K
// multiples of 8).
cudaError_t launch_product_pingpong(const PingpongLaunch& a, cudaStream_t stream) {
  using T = __half;
  if (a.wide && a.cluster == 2 && a.step == 64) return launch_staged<T, 2, true, 192>(a, stream);
  if (a.wide && a.cluster != 1) return cudaErrorInvalidValue;
  if (a.wide) return a.step == 32 ? launch_staged<T, 1, true, 192, 32>(a, stream) : launch_staged<T, 1, true, 192>(a, stream);
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
  unsigned pace_ns = 0;
  bool lsu_store = false, trace = false;
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
  for (const int variant : {0, 1, 2, 3, 4, 5, 6}) {
    if (o.variant >= 0 && variant != o.variant) continue;
    const int cluster = variant == 6 ? 2 : variant >= 4 ? 1 : 1 + variant % 2;
    pp.cluster = cluster, pp.half_staging = variant / 2 > 0, pp.wide = variant >= 4, pp.step = variant == 5 ? 32 : 64;
    pp.mode = 0;
    pp.lsu_store = o.lsu_store;
    pp.pace_ns = o.pace_ns;
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
        "%-11s %5dx%5dx%5d variant %d (cluster %d, %s staging, %d-wide, K step %d), mode %d: max |own - cuBLASLt| %.3g "
        "(%zu beyond 2 ulps); vs float64 own %.3g, cuBLASLt %.3g%s\n",
        sh.name, M, N, K, variant, cluster, pp.half_staging ? "half" : "full", pp.wide ? 192 : 128, pp.step, o.mode, worst, bad,
        err_own, err_lt,
        bad ? "  WRONG" : "");
    pp.mode = o.mode;
    if (o.trace) {  // CTA 0's timeline in cycles from its first tile's start, a launch after a warm one
      long long* d_trace;
      unsigned long long* d_span;
      CK(cudaMalloc(&d_trace, 48 * sizeof(long long)));
      CK(cudaMemset(d_trace, 0, 48 * sizeof(long long)));
      CK(cudaMalloc(&d_span, 2 * 1024 * sizeof(long long)));
      CK(cudaMemset(d_span, 0, 2 * 1024 * sizeof(long long)));
      own();
      pp.trace = d_trace, pp.span = d_span;
      own();
      CK(cudaStreamSynchronize(s));
      pp.trace = nullptr, pp.span = nullptr;
      std::vector<unsigned long long> span(2 * 1024);
      CK(cudaMemcpy(span.data(), d_span, span.size() * 8, cudaMemcpyDeviceToHost));
      CK(cudaFree(d_span));
      unsigned long long t0 = ~0ull;
      std::vector<double> starts, ends;
      for (int b = 0; b < 1024 && span[2 * b]; ++b) t0 = std::min(t0, span[2 * b]);
      for (int b = 0; b < 1024 && span[2 * b]; ++b)
        starts.push_back((span[2 * b] - t0) / 1e3), ends.push_back((span[2 * b + 1] - t0) / 1e3);
      std::sort(starts.begin(), starts.end());
      std::sort(ends.begin(), ends.end());
      auto q = [](const std::vector<double>& v, double f) { return v.empty() ? 0.0 : v[size_t(f * (v.size() - 1))]; };
      printf("  span of %zu CTAs, us from the first start: starts min/median/max %.2f %.2f %.2f; ends min %.2f p10 %.2f median %.2f p90 %.2f max %.2f\n",
             starts.size(), q(starts, 0), q(starts, .5), q(starts, 1), q(ends, 0), q(ends, .1), q(ends, .5), q(ends, .9), q(ends, 1));
      long long st[48];
      CK(cudaMemcpy(st, d_trace, sizeof(st), cudaMemcpyDeviceToHost));
      CK(cudaFree(d_trace));
      for (int l = 0; l < 16 && st[3 * l]; ++l)
        printf("  trace tile %d (warpgroup %d): turn %7lld  products done %7lld (+%6lld)  epilogue done %7lld (+%6lld)\n", l,
               l % 2, st[3 * l] - st[0], st[3 * l + 1] - st[0], st[3 * l + 1] - st[3 * l], st[3 * l + 2] - st[0],
               st[3 * l + 2] - st[3 * l + 1]);
    }
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
    else if (a == "--pace" && i + 1 < argc)
      o.pace_ns = unsigned(std::atoi(argv[++i]));
    else if (a == "--lsu-store")
      o.lsu_store = true;
    else if (a == "--trace")
      o.trace = true;

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
