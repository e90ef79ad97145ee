// ingot.Attention's core on the GPU: P = softmax(scale · Q_h K_hᵀ + mask), context_h = P V_h for
// every (batch, head), flash style: one pass over K/V per block of queries with an online softmax
// (running row max and sum in fp32), so the S×S scores never reach global memory. Q, K and V are
// read straight out of the QKV projection [B*S, 3N] and the context is written straight into
// [B*S, N] (heads side by side), so no transposed copies exist.
//
// Three kernels (and attention_absorbed.cu's for one query with the keys absorbed, and
// attention_wgmma.cu's for many heads on compute capability 9.0, which launch_attention_core
// hands the shapes it takes):
//   flash_kernel<T, D, kKeyMask, kQB, kRows, kCluster>   float16/bfloat16, D in {32, 64, 80, 96, 128}:
//                        tensor cores (mma.sync m16n8k16, fp32 accumulators; operands through
//                        ldmatrix from shared memory filled by cp.async, or K and V by the copy
//                        engine's multicast to a cluster of kCluster query blocks). Each warp owns
//                        16 query rows.
//                        kKeyMask: the mask varies by key alone (BERT's padding mask) or is
//                        absent; the CTA stages it once as fp32 in shared memory, with -inf past
//                        S, so a score costs one FMA. Otherwise each score reads its own mask
//                        element and is bounds-checked. kQB: query blocks per CTA (2 only on
//                        the key-mask path; a separate instantiation keeps the 1-block code as lean).
//                        kRows: the query rows are the given positions of query_rows (ingot.Attention's
//                        classifier token, up to 16 a launch, key-mask path, one query warp).
//   single_query_kernel<T, D>   one query row per (batch, head), S <= 128, D in {32, 64, 128}: a
//                        classifier token's row in its last layer, latency-bound (all loads into
//                        registers at once, one key per thread, shuffle reductions).
//   generic_kernel<T>    any float dtype and D <= 128 (float32 engines, odd head sizes): one warp
//                        per query row, one lane per key, plain fp32 FMAs. Correct, not fast.
//                        Also the query-rows case in float32 and with per-score masks.
//
// Semantics match the CPU kernel (backends/cpu/attention.cc, attention_util.h) exactly:
//   score = (q · k) · scale + mask  (bool mask: true adds 0, false adds `filter`), keys j > i are
//   -inf under `causal`; a row with a NaN score or whose every score is -inf yields NaN (0 with
//   nan_to_zero) for the whole row; finite filter values (-3.4e38, -65504) keep the softmax
//   defined (a fully filtered row is a plain softmax of the shifted scores). The generic kernel
//   subtracts the running max in fp32 before exponentiating. The flash kernel works in base 2:
//   score · log2(e) = (q · k) · (scale · log2 e) + mask · log2 e in one FMA, with mask values
//   that overflow when scaled clamped to ±FLT_MAX (so a row filtered with -3.4e38 stays a
//   softmax of equal scores, as on the CPU), and 2^x by one MUFU instruction.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/attention_device.cuh"
#include "backends/cuda/attention_impl.h"
#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"

namespace ingot::cuda {
namespace {

struct CoreParams {
  const void* qkv;
  void* context;
  int S, H, D, N, qblocks;  // qblocks: query blocks per (batch, head)
  int key_splits;           // flash kernel: warps sharing one query block, each over every key_splits-th key tile (1 or 2)
  int query_warps_log2;     // flash kernel: log2 of the query warps of a CTA (1, 2 or 4 warps)
  int64_t ld;               // 3N, the row length of qkv
  const void* mask;
  int mask_type;
  int64_t mask_b, mask_h, mask_q, mask_k;
  float scale, filter, fill;  // fill: the value of a row that softmax leaves undefined
  float scale_log2;         // flash kernel: scale · log2(e) (its scores are in base 2)
  bool causal;
  // Generic kernel and flash kRows: `rows` query rows per (batch, head), row i at query position
  // query_pos[i] (i itself when query_count is 0), written to context row b * out_rows + out_row0 + i.
  int rows, out_rows, out_row0, query_count;
  int query_pos[kAttentionQueryChunk];
  L2Prefetch prefetch;  // the next steps' weights, requested once the kernel's own loads are out
};

// The mask's additive value for (row_off, key), by the runtime mask type (warp-uniform branch).
__device__ __forceinline__ float mask_at(const CoreParams& p, int64_t off) {
  return mask_value(p.mask, p.mask_type, off, p.filter);
}

// A key-mask element's raw bits, loaded by volatile assembly so that the load is issued where it
// is written: the flash kernel issues it before its tile copies and converts it (mask_from_raw)
// after them, so the load's latency overlaps theirs. (An ordinary load may be scheduled behind
// the copies, and its first use then waits for the whole load phase.) Wide types are read as
// two words; a nonzero test needs both.
__device__ __forceinline__ uint2 mask_raw(const CoreParams& p, int64_t off) {
  uint2 r{0u, 0u};
  switch (p.mask_type) {
    case kMaskBool:
      asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(r.x) : "l"(static_cast<const uint8_t*>(p.mask) + off));
      break;
    case kMaskF16:
    case kMaskBF16:
      asm volatile("ld.global.nc.u16 %0, [%1];" : "=r"(r.x) : "l"(static_cast<const uint16_t*>(p.mask) + off));
      break;
    case kMaskF32:
    case kMaskI32:
      asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(r.x) : "l"(static_cast<const uint32_t*>(p.mask) + off));
      break;
    case kMaskI64:
      asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];"
                   : "=r"(r.x), "=r"(r.y)
                   : "l"(static_cast<const uint2*>(p.mask) + off));
      break;
    default: break;
  }
  return r;
}

// The additive value of mask_raw's bits (as mask_at reads the element).
__device__ __forceinline__ float mask_from_raw(const CoreParams& p, uint2 r) {
  switch (p.mask_type) {
    case kMaskBool:
    case kMaskI32:
    case kMaskI64: return (r.x | r.y) != 0u ? 0.f : p.filter;
    case kMaskF32: return __uint_as_float(r.x);
    case kMaskF16: return __half2float(__ushort_as_half(static_cast<unsigned short>(r.x)));
    case kMaskBF16: return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(r.x)));
    default: return 0.f;
  }
}

// ---------------------------------------------------------------------------------------------
// Tensor-core flash kernel (float16 / bfloat16).
//
// Block sizes. A CTA holds 16·W query rows (W = 1, 2 or 4 query warps, chosen at launch) and
// walks the keys in tiles of 64. A larger W only shares each K/V tile among more warps, so the
// launcher takes W = 4 when that still gives at least one CTA per SM and shrinks W otherwise.
// When even W = 1 leaves SMs idle (DistilBERT at b1 s128: 96 query blocks for 132 SMs), the keys
// are split too: KS = 2 warps share a query block, warp group g taking key tiles g, g + KS, ...,
// each with its own running max, sum and output, merged through shared memory at the end. At b1
// a warp's work is a long dependent instruction stream (Nsight Compute: 2.7 cycles per issued
// instruction, 1.5% occupancy, 9.2 µs per BERT layer), so halving each warp's tiles halves it.
// At the other end (BERT at b32: 768 CTAs of W = 4, about two waves of 3 CTAs per SM) a CTA takes
// two consecutive query blocks when all keys fit its two K/V buffers (S ≤ 128): one wave, and each
// (batch, head)'s K/V read once instead of once per query block.
// Floor of one layer's core at b32 s128 (12 heads, D 64): 1.6 GFLOP (≈ 3 µs of dense fp16 mma on
// an H100) and 19 MB of QKV read + 6 MB of context written (≈ 8 µs at 3 TB/s).
//
// Pipeline: two buffers of KS K/V tile pairs in (dynamic) shared memory besides the Q block. Q and
// the first two rounds of tiles are all requested before anything is computed, and round i + 2
// is requested as soon as round i's buffer is free, so at s128 every global load of a CTA is in
// flight at once. The grid is resident all at once then, and every CTA starts by loading, so
// the copies are committed in the order the warps need them and each wait is for the next piece
// alone: with two query blocks (b32) Q0 + K0, V0, K1, V1, Q1 as five groups, and with one round
// (b1) Q + K, then V, so the first scores are computed while the rest is still arriving (H100,
// alternating A/B: DistilBERT b32 0.7088/0.7073 against 0.7273/0.7183 ms before, BERT-base b32
// 1.498 against 1.508-1.533). The key mask's first element a thread stages is requested before
// the copies (mask_raw) for the same reason.
// K and V by multicast (kCluster 8, the b1 shape: W 1, KS 2, one round, D 64, S 128). A
// multiprocessor takes in about 25 KB/µs from L2 (developer session 22), and each CTA of the
// one-round path reads its head's whole K and V (32 KB at s128): in BERT-base b1's graph, stamps
// of %globaltimer put Q and K in shared memory 2.8-3.1 µs after the wait for the QKV product and
// the kernel's end 3.9-4.0 µs after it (developer session 26). So the 8 query blocks of a head form
// a cluster, and each CTA asks the copy engine for an eighth of the K and V rows once, into the
// shared memory of all eight (cp.async.bulk.tensor ... multicast::cluster, boxes of D + 8 columns
// so they land in the padded rows ldmatrix reads; the 8 columns past a head are never read, and
// past the last V column the copy engine fills zeros). Each CTA's two barriers (K, V) expect every
// tile's bytes and are armed before a cluster barrier, both before the wait for the kernel before.
// H100, alternating A/B (INGOT_CUDA_FLASH_MULTICAST=0, GPU compute median of 300 runs, ms, on /
// off): DistilBERT b1 0.1796 / 0.1837, 0.1794 / 0.1827, 0.1783 / 0.1834; BERT-base b1 0.3552 /
// 0.3614, 0.3567 / 0.3646, 0.3533 / 0.3627 and 0.3552 / 0.3646, 0.3555 / 0.3630, 0.3551 / 0.3625;
// DistilGPT2 b1 (causal) 0.2579 / 0.2594, 0.2585 / 0.2577, 0.2596 / 0.2631.
// Shared memory: (16·W·QB + 256·KS) rows of D + 8 halves (QB query blocks per CTA; W·KS ≤ 4,
// KS ≤ 2, QB = 2 only with W 4, KS 1): 46 KB at D 64, W 4, KS 1 (55 KB with QB 2); 148 KB at most
// (D 128, W 2, KS 2); plus 4 bytes a key (S rounded up to a tile, at most kMaxStagedKeys) on the
// key-mask path.

constexpr int kKeyTile = 64;


// Rows [row0, row0 + rows) of one head's D columns starting at `col` of qkv (batch base `src`)
// into shared memory rows of `kStride` elements; rows past S become zeros.
template <int D>
__device__ __forceinline__ void load_rows(uint16_t* dst, const uint16_t* src, int64_t ld, int col, int row0, int rows,
                                          int S) {
  constexpr int kChunks = D / 8, kStride = D + 8;
  if constexpr (32 % kChunks == 0) {
    // The block is whole warps, so each thread keeps one 16-byte column: rows r, r + step, ...
    // (one address computation, then a pointer step per row).
    const int ch = int(threadIdx.x) % kChunks, step = int(blockDim.x) / kChunks;
    int r = int(threadIdx.x) / kChunks;
    const uint16_t* s = src + int64_t(row0 + r) * ld + col + ch * 8;
    uint32_t d = smem_addr(dst + r * kStride + ch * 8);
    for (; r < rows; r += step, s += step * ld, d += step * kStride * 2) cp_async16(d, row0 + r < S ? s : src, row0 + r < S);
  } else {
    for (int c = int(threadIdx.x); c < rows * kChunks; c += int(blockDim.x)) {
      const int r = c / kChunks, ch = c - r * kChunks, row = row0 + r;
      const bool valid = row < S;
      const uint16_t* s = src + int64_t(valid ? row : 0) * ld + col + ch * 8;
      cp_async16(smem_addr(dst + r * kStride + ch * 8), s, valid);
    }
  }
}

// load_rows for rows that all lie before S (every Q block and K/V tile at s128): no per-copy
// bounds test and select, and the loop unrolled, so a copy costs its pointer step and the
// cp.async. Nsight Compute had load_rows at ~14 instructions a copy, 31 % of a warp's
// instructions in the batch-1 kernel (34 copies a thread).
template <int D>
__device__ __forceinline__ void load_tile(uint16_t* dst, const uint16_t* src, int64_t ld, int col, int row0, int rows,
                                          int S) {
  constexpr int kChunks = D / 8, kStride = D + 8;
  if constexpr (32 % kChunks == 0) {
    if (row0 + rows <= S) {
      const int ch = int(threadIdx.x) % kChunks, step = int(blockDim.x) / kChunks, r0 = int(threadIdx.x) / kChunks;
      const uint16_t* s = src + int64_t(row0 + r0) * ld + col + ch * 8;
      const int64_t s_step = int64_t(step) * ld;
      uint32_t d = smem_addr(dst + r0 * kStride + ch * 8);
      const uint32_t d_step = uint32_t(step * kStride * 2);
      const int n = (rows - r0 + step - 1) / step;
#pragma unroll 8
      for (int i = 0; i < n; ++i, s += s_step, d += d_step)
        cp_async16(d, s);
      return;
    }
  }
  load_rows<D>(dst, src, ld, col, row0, rows, S);
}

// The additive mask (base 2) of this thread's 2 rows × 16 keys of a tile, in the layout of the score
// accumulators (acc[j][e]: row e / 2, key 8j + 2·(lane % 4) + e % 2). Rows and keys past S are
// clamped (their scores are discarded or replaced by -inf).
template <class M>
__device__ __forceinline__ void load_mask_tile(const CoreParams& p, const int64_t row_off[2], int key0, float out[8][4]) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = min(key0 + 8 * j + (e & 1), p.S - 1);
      out[j][e] = mask_to_log2(mask_add<M>(p.mask, row_off[e >> 1] + int64_t(key) * p.mask_k, p.filter));
    }
}

// Shared memory rows of a CTA: the Q block and two rounds of KS K/V tile pairs.
__host__ __device__ constexpr int flash_smem_rows(int query_warps, int key_splits) {
  return 16 * query_warps + 4 * kKeyTile * key_splits;
}
constexpr int kMaxKeySplits = 2;
// Longest sequence whose key mask a CTA stages in shared memory (16 KB of fp32).
constexpr int kMaxStagedKeys = 4096;

// Query rows at the given positions (kRows): rows [0, rows) of one head's D columns at qkv rows
// query_pos[r] into shared memory, zeros past `rows` (up to 16 rows).
template <int D>
__device__ __forceinline__ void load_query_rows(uint16_t* dst, const uint16_t* src, int64_t ld, int col,
                                                const CoreParams& p) {
  constexpr int kChunks = D / 8, kStride = D + 8;
  for (int c = int(threadIdx.x); c < 16 * kChunks; c += int(blockDim.x)) {
    const int r = c / kChunks, ch = c - r * kChunks;
    const bool valid = r < p.rows;
    const uint16_t* s = src + int64_t(valid ? p.query_pos[r] : 0) * ld + col + ch * 8;
    cp_async16(smem_addr(dst + r * kStride + ch * 8), s, valid);
  }
}

template <class T, int D, bool kKeyMask, int kQB, bool kRows, int kCluster>
__global__ void __launch_bounds__(128) flash_kernel(CoreParams p, const __grid_constant__ CUtensorMap kv_map) {
  static_assert(!kRows || (kKeyMask && kQB == 1), "query rows run on the key-mask path, one block per CTA");
  static_assert(kCluster == 1 || (kKeyMask && kQB == 1 && !kRows), "K/V multicast: the one-round key-mask path");
  constexpr bool kMulticast = kCluster > 1;
  constexpr int kStride = D + 8;  // (D/8 + 1) 16-byte chunks per row, an odd count: ldmatrix's 8 rows hit 8 distinct bank groups
  constexpr int kKSteps = D / 16, kDTiles = D / 8;
  constexpr int kTileElems = kKeyTile * kStride;
  extern __shared__ __align__(128) uint16_t smem[];  // 128: the copy engine's boxes land in it

  // Grid: x = batch · heads + head, y = query block (a pair with kQB 2). Powers of two and one
  // division by H keep the integer work before the first load short (a division is ~20
  // instructions).
  const int KS = p.key_splits, query_warps = 1 << p.query_warps_log2;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31, g = lane >> 2, t4 = lane & 3;
  const int qwarp = warp & (query_warps - 1), group = warp >> p.query_warps_log2;
  const int rows_per_cta = 16 * query_warps;
  constexpr int QB = kQB;
  uint16_t* qs = smem;  // QB query blocks
  // Round r's tile for group j: K at kv_buf + ((r & 1) * KS + j) * 2 tiles, V right after it.
  uint16_t* kv_buf = smem + QB * rows_per_cta * kStride;
  const int bh = int(blockIdx.x), b = bh / p.H, h = bh - b * p.H, S = p.S;
  const int first_q0 = int(blockIdx.y) * QB * rows_per_cta;
  const int blocks = QB == 1 ? 1 : min(QB, (S - first_q0 + rows_per_cta - 1) / rows_per_cta);
  const uint16_t* base = static_cast<const uint16_t*>(p.qkv) + int64_t(b) * S * p.ld;
  const int qcol = h * D, kcol = p.N + h * D, vcol = 2 * p.N + h * D;
  // Multicast: K's and V's barriers, armed for every tile's bytes, in every CTA of the cluster
  // before any of them copies (constant work: before the wait for the kernel before).
  __shared__ __align__(8) uint64_t kv_bars[kMulticast ? 2 : 1];
  if constexpr (kMulticast) {
    if (threadIdx.x == 0) {
      const uint32_t bytes = uint32_t((S + kKeyTile - 1) / kKeyTile * kKeyTile * kStride * 2);
      mbar_init(smem_addr(&kv_bars[0]));
      mbar_init(smem_addr(&kv_bars[1]));
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      mbar_expect_tx(smem_addr(&kv_bars[0]), bytes);
      mbar_expect_tx(smem_addr(&kv_bars[1]), bytes);
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  }
  wait_prior_grids();
  allow_dependent_grids();

  // kRows: the rightmost query position (under causal no key beyond it is read).
  int last_pos = 0;
  if constexpr (kRows)
    for (int i = 0; i < p.rows; ++i) last_pos = max(last_pos, p.query_pos[i]);
  int tiles = (S + kKeyTile - 1) / kKeyTile;
  if (p.causal) tiles = min(tiles, ((kRows ? last_pos + 1 : min(first_q0 + blocks * rows_per_cta, S)) - 1) / kKeyTile + 1);
  const int rounds = KS == 1 ? tiles : (tiles + 1) >> 1;
  auto load_round = [&](int r) {  // every group's tile of round r, into buffer r % 2
    for (int j = 0; j < KS; ++j) {
      const int t = r * KS + j;
      if (t >= tiles) break;
      uint16_t* kbuf = kv_buf + ((r & 1) * KS + j) * 2 * kTileElems;
      load_tile<D>(kbuf, base, p.ld, kcol, t * kKeyTile, kKeyTile, S);
      load_tile<D>(kbuf + kTileElems, base, p.ld, vcol, t * kKeyTile, kKeyTile, S);
    }
  };
  // Key-mask path: this thread's first key's mask element, requested before the tiles (see mask_raw).
  const int64_t mbase = int64_t(b) * p.mask_b + int64_t(h) * p.mask_h;
  const int first_key = int(threadIdx.x);
  uint2 first_raw{0u, 0u};
  if constexpr (kKeyMask)
    if (first_key < S) first_raw = mask_raw(p, mbase + int64_t(first_key) * p.mask_k);

  // Two query blocks (S <= 2 key tiles, KS 1, no buffer reuse): five groups in the order the
  // warps need them, so that the first block's scores start when Q0 and K0 are in, while V0, the
  // second key tile and Q1 are still on their way: (Q0, K0), V0, K1, V1, Q1 (some possibly empty).
  constexpr bool kStaged = QB == 2;
  // One round (every key tile in flight at once: batch 1 at s128, keys split over two warps):
  // Q and the K tiles, then the V tiles, so the scores start before V is in.
  const bool split_kv = !kStaged && rounds == 1;
  if constexpr (kStaged) {
    uint16_t* k0buf = kv_buf;
    load_tile<D>(qs, base, p.ld, qcol, first_q0, rows_per_cta, S);
    load_tile<D>(k0buf, base, p.ld, kcol, 0, kKeyTile, S);
    cp_async_commit();
    load_tile<D>(k0buf + kTileElems, base, p.ld, vcol, 0, kKeyTile, S);
    cp_async_commit();
    if (tiles > 1) load_tile<D>(k0buf + 2 * kTileElems, base, p.ld, kcol, kKeyTile, kKeyTile, S);
    cp_async_commit();
    if (tiles > 1) load_tile<D>(k0buf + 3 * kTileElems, base, p.ld, vcol, kKeyTile, kKeyTile, S);
    cp_async_commit();
    if (blocks > 1)
      load_tile<D>(qs + rows_per_cta * kStride, base, p.ld, qcol, first_q0 + rows_per_cta, rows_per_cta, S);
    cp_async_commit();
  } else if (kMulticast) {
    // This CTA's Q; and its 1/kCluster of the keys' K and V rows, copied into the shared memory
    // of every CTA of the cluster (the query blocks of one head) at once.
    load_tile<D>(qs, base, p.ld, qcol, first_q0, rows_per_cta, S);
    cp_async_commit();
    if (threadIdx.x == 0) {
      uint32_t rank;
      asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
      // Every tile of the sequence (not `tiles`, which causal shortens per query block): the
      // cluster's CTAs copy for each other.
      const int slice = (S + kKeyTile - 1) / kKeyTile * kKeyTile / kCluster, r0 = int(rank) * slice;
      uint16_t* dst = kv_buf + (r0 / kKeyTile) * 2 * kTileElems + (r0 % kKeyTile) * kStride;
      const uint16_t everyone = uint16_t((1u << kCluster) - 1);
      tensor_copy_multicast(smem_addr(dst), &kv_map, kcol, b * S + r0, smem_addr(&kv_bars[0]), everyone);
      tensor_copy_multicast(smem_addr(dst + kTileElems), &kv_map, vcol, b * S + r0, smem_addr(&kv_bars[1]), everyone);
    }
  } else if (split_kv) {
    if constexpr (kRows) load_query_rows<D>(qs, base, p.ld, qcol, p);
    else load_tile<D>(qs, base, p.ld, qcol, first_q0, rows_per_cta, S);
    for (int j = 0; j < KS && j < tiles; ++j)
      load_tile<D>(kv_buf + j * 2 * kTileElems, base, p.ld, kcol, j * kKeyTile, kKeyTile, S);
    cp_async_commit();
    for (int j = 0; j < KS && j < tiles; ++j)
      load_tile<D>(kv_buf + (j * 2 + 1) * kTileElems, base, p.ld, vcol, j * kKeyTile, kKeyTile, S);
    cp_async_commit();
  } else {
    if constexpr (kRows) {
      load_query_rows<D>(qs, base, p.ld, qcol, p);
    } else {
      for (int blk = 0; blk < blocks; ++blk)
        load_tile<D>(qs + blk * rows_per_cta * kStride, base, p.ld, qcol, first_q0 + blk * rows_per_cta, rows_per_cta,
                     S);
    }
    load_round(0);
    cp_async_commit();
    if (rounds > 1) load_round(1);
    cp_async_commit();  // possibly empty: every round waits for all groups but the newest
  }
  issue_l2_prefetch(p.prefetch);
  // Waits until at most n (0..4) of the staged groups are in flight, then for every thread's.
  auto wait_staged = [](int n) {
    switch (n) {
      case 4: cp_async_wait<4>(); break;
      case 3: cp_async_wait<3>(); break;
      case 2: cp_async_wait<2>(); break;
      case 1: cp_async_wait<1>(); break;
      default: cp_async_wait<0>(); break;
    }
    __syncthreads();
  };

  // Key-mask path: every key's additive value (0 without a mask, -inf past S) as fp32 in shared
  // memory behind the K/V buffers, written while the tiles are in flight; read back as float2
  // (a thread's two adjacent keys), the same for both of its rows.
  float* kadd = reinterpret_cast<float*>(smem + flash_smem_rows(query_warps * QB, KS) * kStride);
  if constexpr (kKeyMask) {
    for (int k = int(threadIdx.x); k < tiles * kKeyTile; k += int(blockDim.x)) {
      float v = 0.f;
      if (k >= S) v = neg_inf();
      else if (p.mask_type != kMaskNone)
        v = mask_to_log2(k == first_key ? mask_from_raw(p, first_raw) : mask_at(p, mbase + int64_t(k) * p.mask_k));
      kadd[k] = v;
    }
  }

  // With two query blocks per CTA (S <= 2 key tiles, KS 1), every K/V tile stays in its buffer
  // after the first block, which then only re-reads shared memory: half the CTAs, each K/V
  // tile fetched once per (batch, head), and the second block's Q arrived during the first.
  for (int blk = 0; blk < blocks; ++blk) {
    const int q0 = first_q0 + blk * rows_per_cta;
    const uint16_t* qblk = qs + blk * rows_per_cta * kStride;
    const int row0 = q0 + qwarp * 16 + g;  // this thread's rows: row0 and row0 + 8
    // kRows: their query positions (causal compares keys with these).
    int pos[2] = {0, 0};
    if constexpr (kRows)
      for (int r = 0; r < 2; ++r) pos[r] = p.query_pos[min(row0 + 8 * r, p.rows - 1)];
    int64_t mask_row[2] = {0, 0};
    if constexpr (!kKeyMask)
      for (int r = 0; r < 2; ++r)
        mask_row[r] = int64_t(b) * p.mask_b + int64_t(h) * p.mask_h + int64_t(min(row0 + 8 * r, S - 1)) * p.mask_q;

    float o[kDTiles][4];
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float m[2] = {neg_inf(), neg_inf()}, l[2] = {0.f, 0.f};
    uint32_t qf[kKSteps][4];
    const int warp_last_row = kRows ? last_pos : q0 + qwarp * 16 + 15;

    for (int round = 0; round < rounds; ++round) {
      const int t = round * KS + group, k0 = t * kKeyTile;
      const uint16_t* ks = kv_buf + ((round & 1) * KS + group) * 2 * kTileElems;
      const uint16_t* vs = ks + kTileElems;
      // Under causal, a tile wholly right of this warp's diagonal would add exactly nothing.
      const bool active = t < tiles && (!p.causal || k0 <= warp_last_row);
      float madd[8][4];  // full-mask path: this thread's mask values of the tile
      if (!kKeyMask && active) {
        switch (p.mask_type) {  // issued before the wait so the loads' latency overlaps it
          case kMaskBool: load_mask_tile<uint8_t>(p, mask_row, k0 + 2 * t4, madd); break;
          case kMaskF32: load_mask_tile<float>(p, mask_row, k0 + 2 * t4, madd); break;
          case kMaskF16: load_mask_tile<__half>(p, mask_row, k0 + 2 * t4, madd); break;
          case kMaskBF16: load_mask_tile<__nv_bfloat16>(p, mask_row, k0 + 2 * t4, madd); break;
          case kMaskI32: load_mask_tile<int32_t>(p, mask_row, k0 + 2 * t4, madd); break;
          case kMaskI64: load_mask_tile<int64_t>(p, mask_row, k0 + 2 * t4, madd); break;
          default:
#pragma unroll
            for (int j = 0; j < 8; ++j) madd[j][0] = madd[j][1] = madd[j][2] = madd[j][3] = 0.f;
        }
      }
      if constexpr (kStaged) {
        // Block 0: its Q and this round's K (groups 1 and 3). Block 1: its Q, the last group.
        if (blk == 0) wait_staged(round == 0 ? 4 : 2);
        else if (round == 0) wait_staged(0);
      } else if constexpr (kMulticast) {
        cp_async_wait<0>();  // Q
        __syncthreads();     // Q and the key mask are in shared memory
        mbar_wait(smem_addr(&kv_bars[0]));  // K, from every CTA of the cluster
      } else {
        cp_async_wait<1>();  // all but the newest group
        __syncthreads();  // round `round` (and, the first time, Q and the key mask) is in shared memory
      }
      if (round == 0) {
#pragma unroll
        for (int k = 0; k < kKSteps; ++k)
          ldmatrix_x4(qf[k], smem_addr(qblk + (qwarp * 16 + (lane & 15)) * kStride + k * 16 + (lane >> 4) * 8));
      }
      uint32_t pf[kKeyTile / 16][4];  // P as A fragments of the P·V product
      if (active) {
        float s[8][4];  // the tile's scores: (q · k) · scale + mask, then their exponentials
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
        for (int k = 0; k < kKSteps; ++k)
#pragma unroll
          for (int np = 0; np < 4; ++np) {  // key n-tiles 2np and 2np + 1
            uint32_t kb[4];
            ldmatrix_x4(kb, smem_addr(ks + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride + k * 16 +
                                      ((lane >> 3) & 1) * 8));
            mma16816<T>(s[2 * np], qf[k], kb[0], kb[1]);
            mma16816<T>(s[2 * np + 1], qf[k], kb[2], kb[3]);
          }
        if constexpr (kKeyMask) {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float2 ka = *reinterpret_cast<const float2*>(kadd + k0 + 8 * j + 2 * t4);
            s[j][0] = s[j][0] * p.scale_log2 + ka.x, s[j][1] = s[j][1] * p.scale_log2 + ka.y;
            s[j][2] = s[j][2] * p.scale_log2 + ka.x, s[j][3] = s[j][3] * p.scale_log2 + ka.y;
          }
          if constexpr (kRows) {
            if (p.causal) {
#pragma unroll
              for (int j = 0; j < 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                  if (k0 + 8 * j + 2 * t4 + (e & 1) > pos[e >> 1]) s[j][e] = neg_inf();
            }
          } else if (p.causal && k0 + kKeyTile - 1 > q0 + qwarp * 16) {  // the tile reaches right of the diagonal
#pragma unroll
            for (int j = 0; j < 8; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                if (k0 + 8 * j + 2 * t4 + (e & 1) > row0 + 8 * (e >> 1)) s[j][e] = neg_inf();
          }
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = k0 + 8 * j + 2 * t4 + (e & 1), row = row0 + 8 * (e >> 1);
              const float v = s[j][e] * p.scale_log2 + madd[j][e];
              s[j][e] = key >= S || (p.causal && key > row) ? neg_inf() : v;
            }
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float alpha = online_softmax_row([&](int j, int c) -> float& { return s[j][2 * r + c]; }, m[r], l[r]);
#pragma unroll
          for (int j = 0; j < kDTiles; ++j) o[j][2 * r] *= alpha, o[j][2 * r + 1] *= alpha;
        }
#pragma unroll
        for (int k = 0; k < kKeyTile / 16; ++k) {
          pf[k][0] = pack2<T>(s[2 * k][0], s[2 * k][1]);
          pf[k][1] = pack2<T>(s[2 * k][2], s[2 * k][3]);
          pf[k][2] = pack2<T>(s[2 * k + 1][0], s[2 * k + 1][1]);
          pf[k][3] = pack2<T>(s[2 * k + 1][2], s[2 * k + 1][3]);
        }
      }
      if (kStaged && blk == 0) wait_staged(round == 0 ? 3 : 1);  // this round's V (groups 2 and 4)
      if constexpr (kMulticast) mbar_wait(smem_addr(&kv_bars[1]));  // V
      else if (split_kv) wait_staged(0);
      if (active) {
#pragma unroll
        for (int k = 0; k < kKeyTile / 16; ++k)
#pragma unroll
          for (int dp = 0; dp < kDTiles / 2; ++dp) {  // output n-tiles 2dp and 2dp + 1
            uint32_t vb[4];
            ldmatrix_x4_trans(vb, smem_addr(vs + (k * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + dp * 16 +
                                            (lane >> 4) * 8));
            mma16816<T>(o[2 * dp], pf[k], vb[0], vb[1]);
            mma16816<T>(o[2 * dp + 1], pf[k], vb[2], vb[3]);
          }
      }
      if (!kStaged) {
        __syncthreads();  // every warp is done with buffer round % 2
        if (round + 2 < rounds) load_round(round + 2);
        cp_async_commit();
      }
    }

    if (KS > 1) {
      // Merge the key groups into group 0. A thread of group j holds the same rows and columns as
      // the thread of group 0 with its lane and query warp, so the exchange needs no re-layout:
      // slot (query warp, group j - 1) holds each lane's o, m and l side by side. The
      // K/V buffers are free now (the loop ended on a barrier) and hold the slots.
      constexpr int kSlot = (kDTiles * 4 + 4) * 32;
      float* slot = reinterpret_cast<float*>(kv_buf) + (qwarp * (KS - 1) + (group > 0 ? group - 1 : 0)) * kSlot;
      if (group > 0) {
#pragma unroll
        for (int j = 0; j < kDTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) slot[(j * 4 + e) * 32 + lane] = o[j][e];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          slot[(kDTiles * 4 + r) * 32 + lane] = m[r];
          slot[(kDTiles * 4 + 2 + r) * 32 + lane] = l[r];
        }
      }
      __syncthreads();
      if (group > 0) return;
      for (int j2 = 1; j2 < KS; ++j2) {
        const float* peer = reinterpret_cast<const float*>(kv_buf) + (qwarp * (KS - 1) + j2 - 1) * kSlot;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float pm = peer[(kDTiles * 4 + r) * 32 + lane];
          const float m_new = fmaxf(m[r], pm);
          const float m_use = m_new == neg_inf() ? 0.f : m_new;
          const float a_self = fast_exp2(m[r] - m_use), a_peer = fast_exp2(pm - m_use);
          m[r] = m_new;
          l[r] = l[r] * a_self + peer[(kDTiles * 4 + 2 + r) * 32 + lane] * a_peer;
#pragma unroll
          for (int j = 0; j < kDTiles; ++j) {
            o[j][2 * r] = o[j][2 * r] * a_self + peer[(j * 4 + 2 * r) * 32 + lane] * a_peer;
            o[j][2 * r + 1] = o[j][2 * r + 1] * a_self + peer[(j * 4 + 2 * r + 1) * 32 + lane] * a_peer;
          }
        }
      }
    }

    // The warp's 16 × D block of output goes through its own Q rows of shared memory (read into
    // registers at round 0, free now) so that global memory sees whole 16-byte chunks of each row:
    // the accumulator layout's 4-byte stores would fill every 32-byte sector in two halves.
    uint16_t* stage = qs + blk * rows_per_cta * kStride + qwarp * 16 * kStride;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float sum = quad_sum(l[r]);
      // A NaN score makes its exponential, and so the row's sum, NaN (fmaxf skips it in the max).
      const bool undefined = sum != sum || m[r] == neg_inf();
      const float inv = 1.f / sum;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        const uint32_t v = undefined ? pack2<T>(p.fill, p.fill) : pack2<T>(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
        *reinterpret_cast<uint32_t*>(stage + (g + 8 * r) * kStride + 8 * j + 2 * t4) = v;
      }
    }
    __syncwarp();
    constexpr int kChunks = D / 8;
    const int nrows = kRows ? p.rows : S, warp_row0 = q0 + qwarp * 16;
    uint16_t* out = static_cast<uint16_t*>(p.context) +
                    (kRows ? int64_t(b) * p.out_rows + p.out_row0 : int64_t(b) * S) * p.N + h * D;
    for (int c = lane; c < 16 * kChunks; c += 32) {
      const int r = c / kChunks, ch = c - r * kChunks;
      if (warp_row0 + r >= nrows) continue;
      *reinterpret_cast<uint4*>(out + int64_t(warp_row0 + r) * p.N + ch * 8) =
          *reinterpret_cast<const uint4*>(stage + r * kStride + ch * 8);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One query row per (batch, head), S <= 128 keys (a classifier's token in its last layer):
// single_query_kernel<T, D>, float16/bfloat16, D in {32, 64, 128}, key mask or none.
//
// At batch 1 this launch is 12 CTAs that do almost nothing, so its time is instruction latency;
// the flash kRows instantiation spends it on a 16-row tile for one row, two tile copies and a
// merge of its two key warps. Here a CTA of 128 threads issues every load it needs at once,
// straight into registers: thread j the query row and key j's K row (the score), and the V
// chunks it sums later. Scores: 64 FMAs in fp32, base 2 as the flash kernel; one block-wide max
// (shuffles, then the four warps' maxima through shared memory), exponentials to shared memory;
// then thread (chunk c, group g) sums exp(s_j) · V[j][8c..8c+8) over keys j ≡ g (mod G), the
// G = 128 / (D/8) groups of a chunk being lanes of one warp, which reduces the sums (and the
// row's exp sum alongside) by shuffles; group 0 writes the chunk's 16 bytes.
// Semantics as the flash kernel: a NaN score or an all -inf row gives `fill` for the row.
constexpr int kSingleQueryThreads = 128;

template <class T, int D>
__global__ void __launch_bounds__(kSingleQueryThreads) single_query_kernel(CoreParams p) {
  constexpr int kChunks = D / 8, kGroups = kSingleQueryThreads / kChunks, kPerGroup = kSingleQueryThreads / kGroups;
  static_assert(kGroups <= 32 && 32 % kGroups == 0, "a chunk's groups are lanes of one warp");
  __shared__ float e[kSingleQueryThreads];
  __shared__ float wmax[kSingleQueryThreads / 32];
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  wait_prior_grids();
  allow_dependent_grids();
  const int bh = int(blockIdx.x), b = bh / p.H, h = bh - b * p.H, S = p.S, pos = p.query_pos[0];
  const uint16_t* base = static_cast<const uint16_t*>(p.qkv) + int64_t(b) * S * p.ld;
  // Phase 2's layout: chunk c of the output, keys g, g + G, ... (key g + G·i for i < kPerGroup).
  const int group = lane % kGroups, chunk = warp * (32 / kGroups) + lane / kGroups;

  // Every load first: mask element, Q, this thread's K row, its V chunks.
  const bool valid = tid < S && !(p.causal && tid > pos);
  const int64_t mbase = int64_t(b) * p.mask_b + int64_t(h) * p.mask_h;
  uint2 mraw{0u, 0u};
  if (valid && p.mask_type != kMaskNone) mraw = mask_raw(p, mbase + int64_t(tid) * p.mask_k);
  uint4 q[kChunks], k[kChunks], v[kPerGroup];
  const uint4* qrow = reinterpret_cast<const uint4*>(base + int64_t(pos) * p.ld + h * D);
  const uint4* krow = reinterpret_cast<const uint4*>(base + int64_t(valid ? tid : 0) * p.ld + p.N + h * D);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) q[c] = qrow[c], k[c] = krow[c];
#pragma unroll
  for (int i = 0; i < kPerGroup; ++i) {
    const int key = group + kGroups * i;
    v[i] = key < S ? *reinterpret_cast<const uint4*>(base + int64_t(key) * p.ld + 2 * p.N + h * D + chunk * 8)
                   : make_uint4(0u, 0u, 0u, 0u);
  }
  issue_l2_prefetch(p.prefetch);

  // The score of key tid, in base 2.
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const Pack<T, 8>& qv = reinterpret_cast<const Pack<T, 8>&>(q[c]);
    const Pack<T, 8>& kv = reinterpret_cast<const Pack<T, 8>&>(k[c]);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      acc[w] = fmaf(to_float(qv.v[2 * w]), to_float(kv.v[2 * w]),
                    fmaf(to_float(qv.v[2 * w + 1]), to_float(kv.v[2 * w + 1]), acc[w]));
  }
  const float dot = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  const float score = valid ? dot * p.scale_log2 + mask_to_log2(mask_from_raw(p, mraw)) : neg_inf();

  // Block max (fmaxf skips a NaN score; its exponential makes the sum NaN below).
  float m = score;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) wmax[warp] = m;
  __syncthreads();
  m = wmax[0];
#pragma unroll
  for (int w = 1; w < kSingleQueryThreads / 32; ++w) m = fmaxf(m, wmax[w]);
  // An all -inf row subtracts 0, so its exponentials are 0 rather than NaN (then `fill`).
  const float m_use = m == neg_inf() ? 0.f : m;
  e[tid] = fast_exp2(score - m_use);
  __syncthreads();

  float out[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, sum = 0.f;
#pragma unroll
  for (int i = 0; i < kPerGroup; ++i) {
    const float w = e[group + kGroups * i];
    sum += w;
    const Pack<T, 8>& vv = reinterpret_cast<const Pack<T, 8>&>(v[i]);
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = fmaf(w, to_float(vv.v[j]), out[j]);
  }
#pragma unroll
  for (int o = kGroups / 2; o > 0; o >>= 1) {
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] += __shfl_xor_sync(0xffffffffu, out[j], o);
  }
  if (group != 0) return;
  const bool undefined = sum != sum || m == neg_inf();
  const float inv = 1.f / sum;
  uint4 r;
  uint32_t* rw = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    rw[j] = undefined ? pack2<T>(p.fill, p.fill) : pack2<T>(out[2 * j] * inv, out[2 * j + 1] * inv);
  uint16_t* dst = static_cast<uint16_t*>(p.context) + (int64_t(b) * p.out_rows + p.out_row0) * p.N + h * D + chunk * 8;
  *reinterpret_cast<uint4*>(dst) = r;
}

// ---------------------------------------------------------------------------------------------
// Generic kernel: kGenericRows warps per CTA, one query row per warp; keys in tiles of 32 (one
// per lane) staged with V as float in shared memory. Lane j computes the score of key k0 + j;
// the warp then folds the tile into its running max/sum and each lane accumulates the output
// dims d = lane + 32c.

constexpr int kGenericRows = 8;
constexpr int kGenericDims = int(kAttentionMaxHeadDim) / 32;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__global__ void __launch_bounds__(kGenericRows * 32) generic_kernel(CoreParams p) {
  constexpr int kMaxD = int(kAttentionMaxHeadDim);
  __shared__ float qs[kGenericRows][kMaxD];
  __shared__ float ks[32][kMaxD + 1];  // +1: lane j reads row j, so the 32 lanes hit 32 banks
  __shared__ float vs[32][kMaxD];

  wait_prior_grids();
  allow_dependent_grids();
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31, D = p.D, S = p.S;
  const int qb = int(blockIdx.x % unsigned(p.qblocks));
  const int bh = int(blockIdx.x / unsigned(p.qblocks)), h = bh % p.H, b = bh / p.H;
  const int q0 = qb * kGenericRows, row = q0 + warp;
  auto position = [&](int i) { return p.query_count ? p.query_pos[i] : i; };
  const int pos = position(min(row, p.rows - 1));  // this warp's query position
  const T* base = static_cast<const T*>(p.qkv) + int64_t(b) * S * p.ld;

  issue_l2_prefetch(p.prefetch);
  int last_pos = 0;  // the CTA's rightmost query position (causal: no key beyond it is read)
  for (int r = 0; r < kGenericRows && q0 + r < p.rows; ++r) last_pos = max(last_pos, position(q0 + r));
  for (int i = int(threadIdx.x); i < kGenericRows * D; i += int(blockDim.x)) {
    const int r = i / D, d = i - r * D;
    qs[r][d] = q0 + r < p.rows ? to_float(base[int64_t(position(q0 + r)) * p.ld + h * D + d]) : 0.f;
  }
  const int64_t mask_row = int64_t(b) * p.mask_b + int64_t(h) * p.mask_h + int64_t(pos) * p.mask_q;

  float o[kGenericDims] = {};
  float m = neg_inf(), l = 0.f;
  bool has_nan = false;
  int tiles = (S + 31) / 32;
  if (p.causal) tiles = min(tiles, last_pos / 32 + 1);
  for (int t = 0; t < tiles; ++t) {
    const int k0 = t * 32;
    __syncthreads();  // the previous tile is consumed (and, first time, Q is written)
    for (int i = int(threadIdx.x); i < 32 * D; i += int(blockDim.x)) {
      const int r = i / D, d = i - r * D;
      const bool valid = k0 + r < S;
      const T* kv = base + int64_t(valid ? k0 + r : 0) * p.ld + h * D + d;
      ks[r][d] = valid ? to_float(kv[p.N]) : 0.f;
      vs[r][d] = valid ? to_float(kv[2 * p.N]) : 0.f;
    }
    __syncthreads();
    const int key = k0 + lane;
    float s = 0.f;
    for (int d = 0; d < D; ++d) s = fmaf(qs[warp][d], ks[lane][d], s);
    s = s * p.scale + (p.mask_type != kMaskNone ? mask_at(p, mask_row + int64_t(min(key, S - 1)) * p.mask_k) : 0.f);
    if (key >= S || (p.causal && key > pos)) s = neg_inf();
    has_nan |= __any_sync(0xffffffffu, s != s) != 0;
    const float m_new = fmaxf(m, warp_max(s));
    const float m_use = m_new == neg_inf() ? 0.f : m_new;
    const float alpha = expf(m - m_use);
    const float pj = expf(s - m_use);
    l = l * alpha + warp_sum(pj);
    m = m_new;
#pragma unroll
    for (int c = 0; c < kGenericDims; ++c) o[c] *= alpha;
    for (int j = 0; j < 32; ++j) {
      const float pv = __shfl_sync(0xffffffffu, pj, j);
#pragma unroll
      for (int c = 0; c < kGenericDims; ++c)
        if (lane + 32 * c < D) o[c] = fmaf(pv, vs[j][lane + 32 * c], o[c]);
    }
  }
  if (row >= p.rows) return;
  const bool undefined = has_nan || m == neg_inf();
  T* dst = static_cast<T*>(p.context) + (int64_t(b) * p.out_rows + p.out_row0 + row) * p.N + h * D;
#pragma unroll
  for (int c = 0; c < kGenericDims; ++c)
    if (lane + 32 * c < D) dst[lane + 32 * c] = from_float<T>(undefined ? p.fill : o[c] / l);
}

// Dynamic shared memory of a flash CTA: its rows of D + 8 halves, then `staged_keys` floats of
// the key mask (key-mask path).
constexpr size_t flash_smem_bytes(int D, int query_warps, int key_splits, int staged_keys) {
  return size_t(flash_smem_rows(query_warps, key_splits)) * size_t(D + 8) * 2 + size_t(staged_keys) * 4;
}

// Launches flash_kernel<T, D, kKeyMask, kQB, kRows, kCluster> with its dynamic shared memory; the
// first launch of each instantiation raises the kernel's limit to the largest block's need (above
// the 48 KB default at D 128; a function attribute, not a stream operation, so also fine during
// graph capture). kCluster > 1: clusters of that many query blocks along y, K/V by kv_map.
template <class T, int D, bool kKeyMask, int kQB, bool kRows, int kCluster = 1>
cudaError_t launch_flash_d(const CoreParams& p, int query_warps, dim3 grid, cudaStream_t stream,
                           const CUtensorMap& kv_map) {
  // The largest block launched: W·KS ≤ 4 warps with KS ≤ 2 (W 2, KS 2); two query blocks of
  // W 4 (KS 1) need fewer rows.
  auto* kernel = flash_kernel<T, D, kKeyMask, kQB, kRows, kCluster>;
  static const cudaError_t raised = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(flash_smem_bytes(D, 2, kMaxKeySplits, kKeyMask ? kMaxStagedKeys : 0)));
  if (raised != cudaSuccess) return raised;
  const int staged = kKeyMask ? (p.S + kKeyTile - 1) / kKeyTile * kKeyTile : 0;
  const size_t smem = flash_smem_bytes(D, query_warps * kQB, p.key_splits, staged);
  return launch_dependent_clusters(kernel, grid, dim3(unsigned(32 * query_warps * p.key_splits)), smem, stream,
                                   dim3(1, unsigned(kCluster), 1), p, kv_map);
}

// Which flash_kernel instantiation a launch takes.
enum class FlashVariant { kScoreMask, kKeyMask, kKeyMaskTwoBlocks, kKeyMaskRows, kKeyMaskMulticast };

// Query blocks of a head that share its K and V by multicast (FlashVariant::kKeyMaskMulticast).
constexpr int kFlashCluster = 8;

template <class T>
cudaError_t launch_flash(const CoreParams& p, int64_t D, FlashVariant v, int query_warps, dim3 grid,
                         cudaStream_t stream, const CUtensorMap& kv_map = CUtensorMap{}) {
  auto go = [&](auto d) {
    constexpr int kD = decltype(d)::value;
    switch (v) {
      case FlashVariant::kScoreMask: return launch_flash_d<T, kD, false, 1, false>(p, query_warps, grid, stream, kv_map);
      case FlashVariant::kKeyMask: return launch_flash_d<T, kD, true, 1, false>(p, query_warps, grid, stream, kv_map);
      case FlashVariant::kKeyMaskTwoBlocks:
        return launch_flash_d<T, kD, true, 2, false>(p, query_warps, grid, stream, kv_map);
      case FlashVariant::kKeyMaskRows: return launch_flash_d<T, kD, true, 1, true>(p, query_warps, grid, stream, kv_map);
      case FlashVariant::kKeyMaskMulticast:
        if constexpr (kD == 64)
          return launch_flash_d<T, kD, true, 1, false, kFlashCluster>(p, query_warps, grid, stream, kv_map);
        return cudaErrorInvalidValue;
    }
    return cudaErrorInvalidValue;
  };
  switch (D) {
    case 32: return go(std::integral_constant<int, 32>{});
    case 64: return go(std::integral_constant<int, 64>{});
    case 80: return go(std::integral_constant<int, 80>{});
    case 96: return go(std::integral_constant<int, 96>{});
    case 128: return go(std::integral_constant<int, 128>{});
    default: return cudaErrorInvalidValue;
  }
}

bool flash_head_dim(int64_t D) { return D == 32 || D == 64 || D == 80 || D == 96 || D == 128; }

cudaError_t launch_single_query(const CoreParams& p, DType dtype, int64_t D, unsigned grid, cudaStream_t stream) {
  auto go = [&](auto t) {
    using T = decltype(t);
    switch (D) {
      case 32: return launch_dependent(single_query_kernel<T, 32>, grid, kSingleQueryThreads, 0, stream, p);
      case 64: return launch_dependent(single_query_kernel<T, 64>, grid, kSingleQueryThreads, 0, stream, p);
      default: return launch_dependent(single_query_kernel<T, 128>, grid, kSingleQueryThreads, 0, stream, p);
    }
  };
  return dtype == DType::kFloat16 ? go(__half{}) : go(__nv_bfloat16{});
}

// query_rows: chunks of up to kAttentionQueryChunk positions, one launch each (a classifier's one
// token is one launch of B·H CTAs). float16/bfloat16 with a key mask or none: one position and
// S <= 128 (D 32, 64, 128) on single_query_kernel, else the flash kernel's kRows instantiation
// (one query warp, the keys split over two warps when B·H leaves SMs idle); otherwise the generic
// kernel.
cudaError_t launch_query_rows(const AttentionCoreArgs& a, CoreParams p, int64_t heads, cudaStream_t stream) {
  if (a.query_count > INT_MAX || a.query_pos == nullptr) return cudaErrorInvalidValue;
  const bool flash = (a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16) && flash_head_dim(a.D) &&
                     a.mask.q == 0 && a.S <= kMaxStagedKeys && heads <= INT_MAX;
  if (flash) {
    p.query_warps_log2 = 0;
    p.qblocks = 1;
    p.key_splits = heads < a.sm_count && a.S > kKeyTile ? kMaxKeySplits : 1;
  }
  p.out_rows = int(a.query_count);
  for (int64_t c0 = 0; c0 < a.query_count; c0 += kAttentionQueryChunk) {
    p.out_row0 = int(c0);
    p.rows = p.query_count = int(std::min<int64_t>(kAttentionQueryChunk, a.query_count - c0));
    for (int i = 0; i < p.rows; ++i) {
      const int64_t q = a.query_pos[c0 + i];
      if (q < 0 || q >= a.S) return cudaErrorInvalidValue;
      p.query_pos[i] = int(q);
    }
    if (flash && p.rows == 1 && a.S <= kSingleQueryThreads && (a.D == 32 || a.D == 64 || a.D == 128)) {
      if (const cudaError_t e = launch_single_query(p, a.dtype, a.D, unsigned(heads), stream); e != cudaSuccess) return e;
      p.prefetch.count = 0;
      continue;
    }
    if (flash) {
      const dim3 grid{unsigned(heads), 1};
      const cudaError_t e = a.dtype == DType::kFloat16
                                ? launch_flash<__half>(p, a.D, FlashVariant::kKeyMaskRows, 1, grid, stream)
                                : launch_flash<__nv_bfloat16>(p, a.D, FlashVariant::kKeyMaskRows, 1, grid, stream);
      if (e != cudaSuccess) return e;
      p.prefetch.count = 0;  // the first chunk's launch asked for them
      continue;
    }
    p.qblocks = (p.rows + kGenericRows - 1) / kGenericRows;
    if (heads * p.qblocks > INT_MAX) return cudaErrorInvalidConfiguration;
    const unsigned grid = unsigned(heads * p.qblocks);
    cudaError_t e = cudaErrorInvalidValue;
    dispatch_device_float(a.dtype, [&](auto t) {
      e = launch_dependent(generic_kernel<decltype(t)>, grid, kGenericRows * 32, 0, stream, p);
    });
    if (e != cudaSuccess) return e;
    p.prefetch.count = 0;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launch_attention_core(const AttentionCoreArgs& a, cudaStream_t stream) {
  const int mask_type = mask_type_of(a.mask.data, a.mask.dtype);
  if (mask_type < 0 || a.D <= 0 || a.D > kAttentionMaxHeadDim || a.S > INT_MAX || a.H * a.D > INT_MAX)
    return cudaErrorInvalidValue;
  if (a.B == 0 || a.S == 0) return cudaSuccess;
  CoreParams p{};
  p.qkv = a.qkv, p.context = a.context;
  p.S = int(a.S), p.H = int(a.H), p.D = int(a.D), p.N = int(a.H * a.D), p.key_splits = 1, p.ld = 3 * a.H * a.D;
  p.mask = a.mask.data, p.mask_type = mask_type, p.mask_b = a.mask.b, p.mask_h = a.mask.h, p.mask_q = a.mask.q;
  p.mask_k = a.mask.k, p.scale = a.scale, p.filter = a.mask.filter, p.scale_log2 = a.scale * kLog2e;
  p.fill = a.mask.nan_to_zero ? 0.f : std::numeric_limits<float>::quiet_NaN(), p.causal = a.mask.causal;
  p.rows = p.out_rows = p.S, p.out_row0 = 0, p.query_count = 0;
  p.prefetch = a.prefetch;
  const int64_t heads = a.B * a.H;
  if (a.query_count > 0) return launch_query_rows(a, p, heads, stream);
  if (attention_wgmma_fits(a))
    if (const cudaError_t e = launch_attention_wgmma(a, stream); e != cudaErrorNotSupported) return e;
  auto blocks = [&](int64_t rows) { return heads * ((a.S + rows - 1) / rows); };
  const bool half = a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16;
  if (half && flash_head_dim(a.D)) {
    int warps = 4;  // query warps per CTA; see "Block sizes" above
    while (warps > 1 && blocks(16 * warps) < a.sm_count) warps /= 2;
    if (blocks(16 * warps) > INT_MAX) return cudaErrorInvalidConfiguration;
    const int64_t key_tiles = (a.S + kKeyTile - 1) / kKeyTile;
    p.key_splits = warps <= 2 && blocks(16 * warps) < a.sm_count && key_tiles > 1 ? kMaxKeySplits : 1;
    p.qblocks = int((a.S + 16 * warps - 1) / (16 * warps));
    p.query_warps_log2 = warps == 4 ? 2 : warps == 2 ? 1 : 0;
    // Masks that vary by key alone (or none) are staged in shared memory; others are read per score.
    const bool key_mask = a.mask.q == 0 && a.S <= kMaxStagedKeys;
    // Two query blocks per CTA (key-mask path) when all keys fit the two K/V buffers and the
    // halved grid still gives every SM two CTAs (BERT at b32: 384 CTAs of 128 rows, not 768 of 64).
    const int64_t pairs = heads * ((p.qblocks + 1) / 2);
    const int per_cta =
        key_mask && p.key_splits == 1 && key_tiles <= 2 && p.qblocks >= 2 && pairs >= 2 * a.sm_count ? 2 : 1;
    const int64_t grid_y = (p.qblocks + per_cta - 1) / per_cta;
    if (grid_y > 65535) return cudaErrorInvalidConfiguration;  // S up to 1M
    const dim3 grid{unsigned(heads), unsigned(grid_y)};
    FlashVariant v = !key_mask ? FlashVariant::kScoreMask
                     : per_cta == 2 ? FlashVariant::kKeyMaskTwoBlocks
                                    : FlashVariant::kKeyMask;
    // Multicast (see "K and V by multicast" above): one round of whole key tiles, query blocks in
    // clusters of kFlashCluster.
    CUtensorMap kv_map{};
    const int slice = int(key_tiles * kKeyTile / kFlashCluster);
    if (v == FlashVariant::kKeyMask && a.D == 64 && key_tiles <= p.key_splits && a.S == key_tiles * kKeyTile &&
        grid_y % kFlashCluster == 0 && a.B * a.S <= INT32_MAX && a.multicast &&
        encode_tensor_map(&kv_map, a.dtype, a.qkv, a.B * a.S, 3 * a.H * a.D, 3 * a.H * a.D, slice, int(a.D) + 8, false))
      v = FlashVariant::kKeyMaskMulticast;
    return a.dtype == DType::kFloat16 ? launch_flash<__half>(p, a.D, v, warps, grid, stream, kv_map)
                                      : launch_flash<__nv_bfloat16>(p, a.D, v, warps, grid, stream, kv_map);
  }
  if (blocks(kGenericRows) > INT_MAX) return cudaErrorInvalidConfiguration;
  p.qblocks = int((a.S + kGenericRows - 1) / kGenericRows);
  const unsigned grid = unsigned(blocks(kGenericRows));
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(a.dtype, [&](auto t) {
    e = launch_dependent(generic_kernel<decltype(t)>, grid, kGenericRows * 32, 0, stream, p);
  });
  return e;
}

}  // namespace ingot::cuda
