// launch_split_k_product (gemm_split_k.h): products of at most 128 rows, split over K across
// the CTAs of a cluster. Hopper only (wgmma): built for sm_90a alone (CMakeLists.txt).
//
// Grid (S, N / 64), clusters of S along x: CTA (s, t) computes rows [0, 128) x columns
// [64t, 64t + 64) over K slice s (Kc = K / S columns of A, rows of W), in four steps:
//   1. its W slice (Kc x 64, constant) into shared memory by the tensor copy engine (TMA, one
//      or two boxes), issued before waiting for the kernel before it (cuda_dependent_launch.h):
//      the weights stream in while that one ends;
//   2. its A slice in boxes of 128 rows x 64 columns (rows past `rows` zero-filled by the copy
//      engine), one mbarrier each, so that the products of the first start while the others
//      arrive;
//   3. two warpgroups of 64 rows, wgmma m64n64k16 with fp32 accumulators straight from shared
//      memory (A K-major, W N-major as it is stored), the partial tile into shared memory;
//   4. after a cluster barrier, CTA s sums its 1/S of the tile over the cluster's partials in
//      rank order (distributed shared memory: the same sum every run), adds the bias and C,
//      applies the activation, rounds once and stores; a second barrier keeps every CTA's
//      shared memory alive until the others have read it.
// Everything of a slice stays in shared memory (at Kc = 384: 180 KB), so no buffer is reused
// and the loads are issued all at once, in 128-byte-swizzled rows (the copy engine's layout,
// which wgmma reads). Measured on the way (H100, session 18, BERT-base b1 with cuBLASLt's
// products 0.400-0.407 ms): 16-byte cp.async copies from every thread and mma.sync 0.565 ms,
// bulk copies of one 128-byte row piece each 1.03, TMA boxes 0.494, then wgmma 0.454, then
// clusters of at most 4 (FFN 2's 3072-deep product back to cuBLASLt) 0.431.
#include <cooperative_groups.h>
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/gemm_split_k.h"
#include "backends/cuda/mma_sync.cuh"  // smem_addr
#include "backends/cuda/pointwise_activation.cuh"
#include "backends/cuda/wgmma.cuh"

namespace ingot::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kBM = int(kOwnProductMaxRows), kBN = 64, kThreads = 256, kMaxSlice = 384;
// Clusters of up to 4: with up to 8, BERT-base b1 took 0.452 ms against 0.431 (H100, session 18).
constexpr int kMaxSplit = 4;
constexpr int kBox = 64;               // columns of an A box and of W: 128 bytes, the swizzle span
constexpr int kMaxABoxes = kMaxSlice / kBox;
constexpr int kPartStride = kBN + 4;   // floats a partial row takes
constexpr int a_boxes(int slice) { return (slice + kBox - 1) / kBox; }
// W's box rows: the slice in one box, or two when it is deeper than a box may be (256).
constexpr int w_box_rows(int slice) { return slice <= 256 ? slice : slice / 2; }

// A's boxes (128 rows of 128 bytes each), W (slice rows of 128 bytes), the partial tile; the
// swizzled regions 1024-byte aligned.
constexpr size_t kAlign = 1024;
constexpr size_t a_bytes(int slice) { return size_t(a_boxes(slice)) * kBM * 128; }
constexpr size_t w_bytes(int slice) { return (size_t(slice) * 128 + kAlign - 1) / kAlign * kAlign; }
constexpr size_t smem_bytes(int slice) {
  return kAlign + a_bytes(slice) + w_bytes(slice) + size_t(kBM) * kPartStride * 4;
}

struct Params {
  const void* bias;
  const void* c;
  int64_t ldc;
  void* d;
  int64_t ldd;
  int rows, slice;
  bool add_c, has_act;
  PointwiseActivation act;
};

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    split_k_product_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap wmap,
                           const Params p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + kAlign - 1) / kAlign * kAlign);
  const int slice = p.slice, boxes = a_boxes(slice), wrows = w_box_rows(slice);
  const uint32_t as = smem_addr(smem), ws = as + uint32_t(a_bytes(slice));
  float* part = reinterpret_cast<float*>(smem + a_bytes(slice) + w_bytes(slice));
  const int tid = int(threadIdx.x), split = int(blockIdx.x), S = int(gridDim.x);
  const int n0 = int(blockIdx.y) * kBN, k0 = split * slice;
  const int warp = tid >> 5, lane = tid & 31;

  // Barriers: W, then one per A box.
  __shared__ __align__(8) uint64_t bars[1 + kMaxABoxes];
  if (tid == 0) {
    for (int i = 0; i <= boxes; ++i) mbar_init(smem_addr(&bars[i]));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    // 1. W (constant), before waiting for the kernel before.
    mbar_expect_tx(smem_addr(&bars[0]), uint32_t(slice) * 128);
    for (int r = 0; r < slice; r += wrows) tensor_copy(ws + uint32_t(r) * 128, &wmap, n0, k0 + r, smem_addr(&bars[0]));
  }
  wait_prior_grids();
  // 2. A's boxes of 64 columns (the last may reach past the slice: those columns go unused).
  if (tid == 0) {
    for (int b = 0; b < boxes; ++b) {
      mbar_expect_tx(smem_addr(&bars[1 + b]), kBM * 128);
      tensor_copy(as + uint32_t(b) * kBM * 128, &amap, k0 + b * kBox, 0, smem_addr(&bars[1 + b]));
    }
  }
  allow_dependent_grids();
  __syncthreads();  // the barriers' initialisation, before anyone waits on them

  const int g = lane >> 2, tq = lane & 3;
  mbar_wait(smem_addr(&bars[0]));
  // 3. Warpgroup wg: rows 64·wg.., all 64 columns.
  const int wg = warp >> 2, w = warp & 3;
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  for (int b = 0; b < boxes; ++b) {
    mbar_wait(smem_addr(&bars[1 + b]));
    const uint32_t abox = as + uint32_t(b) * kBM * 128 + uint32_t(wg) * 64 * 128;
    const int kend = min(kBox, slice - b * kBox);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBox; kk += 16)
      if (kk < kend)  // the last box may be partial
        wgmma_ss<T, true>(acc, sw128_desc(abox + uint32_t(kk) * 2), sw128_desc(ws + uint32_t(b * kBox + kk) * 128));
    wgmma_commit();
  }
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int row = wg * 64 + w * 16 + g, col = j * 8 + 2 * tq;
    *reinterpret_cast<float2*>(part + row * kPartStride + col) = make_float2(acc[j * 4], acc[j * 4 + 1]);
    *reinterpret_cast<float2*>(part + (row + 8) * kPartStride + col) = make_float2(acc[j * 4 + 2], acc[j * 4 + 3]);
  }

  // 4. This CTA's share of the tile's 4-column vectors, summed over the cluster in rank order.
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  constexpr int kVecs = kBM * kBN / 4;
  const int per = (kVecs + S - 1) / S, lo = split * per, hi = min(lo + per, kVecs);
  for (int v = lo + tid; v < hi; v += kThreads) {
    const int row = v / (kBN / 4), col = (v % (kBN / 4)) * 4;
    if (row >= p.rows) continue;
    float4 x[kMaxSplit];  // every load issued before the first add
#pragma unroll
    for (int r = 0; r < kMaxSplit; ++r)
      if (r < S) x[r] = *reinterpret_cast<const float4*>(cluster.map_shared_rank(part, r) + row * kPartStride + col);
    float4 sum = x[0];
#pragma unroll
    for (int r = 1; r < kMaxSplit; ++r)
      if (r < S) sum.x += x[r].x, sum.y += x[r].y, sum.z += x[r].z, sum.w += x[r].w;
    float y[4] = {sum.x, sum.y, sum.z, sum.w};
    const int n = n0 + col;
    if (p.bias) {
      float b[4];
      load_floats<T, 4>(static_cast<const T*>(p.bias) + n, b);
#pragma unroll
      for (int e = 0; e < 4; ++e) y[e] += b[e];
    }
    if (p.add_c) {
      float c[4];
      load_floats<T, 4>(static_cast<const T*>(p.c) + int64_t(row) * p.ldc + n, c);
#pragma unroll
      for (int e = 0; e < 4; ++e) y[e] += c[e];
    }
    if (p.has_act)
#pragma unroll
      for (int e = 0; e < 4; ++e) y[e] = activate(y[e], p.act);
    store_floats<T, 4>(static_cast<T*>(p.d) + int64_t(row) * p.ldd + n, y);
  }
  cluster.sync();
}

bool aligned(const void* ptr, size_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// A row-major [rows, cols] matrix of 2-byte elements with `ld` elements a row, in boxes of
// box_rows x 64 columns, 128-byte swizzled; out-of-range elements read as zero.
bool tensor_map(CUtensorMap* map, DType dtype, const void* base, int64_t rows, int64_t cols, int64_t ld, int box_rows) {
  return encode_tensor_map(map, dtype, base, rows, cols, ld, box_rows, kBox, /*swizzle_128b=*/true);
}

template <class T>
cudaError_t launch_typed(const CUtensorMap& amap, const CUtensorMap& wmap, const Params& p, int split, int tiles,
                         cudaStream_t stream) {
  static const cudaError_t raised = cudaFuncSetAttribute(
      split_k_product_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes(kMaxSlice)));
  if (raised != cudaSuccess) return raised;
  return launch_dependent_clusters(split_k_product_kernel<T>, dim3(unsigned(split), unsigned(tiles)), kThreads,
                                   smem_bytes(p.slice), stream, dim3(unsigned(split), 1, 1), amap, wmap, p);
}

}  // namespace

int split_k_plan(const SplitKProduct& p, int sm_count) {
  if (p.dtype != DType::kFloat16 && p.dtype != DType::kBFloat16) return 0;
  if (p.rows < 1 || p.rows > kBM || p.cols < kBN || p.cols % kBN != 0 || p.cols / kBN > 65535 || p.depth < 16 ||
      p.depth % 16 != 0)
    return 0;
  if (p.beta != 0.f && p.beta != 1.f) return 0;
  // 16-byte rows of A and W (cp.async), 8-byte vectors of bias, C and D.
  if (p.lda % 8 != 0 || p.ldw % 8 != 0 || !aligned(p.a, 16) || !aligned(p.w, 16)) return 0;
  if (p.ldd % 4 != 0 || !aligned(p.d, 8) || (p.bias && !aligned(p.bias, 8))) return 0;
  if (p.beta == 1.f && (p.ldc % 4 != 0 || !aligned(p.c, 8))) return 0;
  // The most splits that keep one CTA per multiprocessor and a slice that fits.
  const int64_t tiles = p.cols / kBN;
  for (int s = kMaxSplit; s >= 1; --s) {
    if (p.depth % (16 * s) != 0 || p.depth / s > kMaxSlice) continue;
    if (tiles * s <= std::max(sm_count, 1)) return s;
  }
  return 0;
}

cudaError_t launch_split_k_product(const SplitKProduct& p, int split, cudaStream_t stream) {
  if (split < 1 || split > kMaxSplit || p.depth % split != 0) return cudaErrorInvalidValue;
  const int slice = int(p.depth / split);
  CUtensorMap amap, wmap;
  if (!tensor_map(&amap, p.dtype, p.a, p.rows, p.depth, p.lda, kBM) ||
      !tensor_map(&wmap, p.dtype, p.w, p.depth, p.cols, p.ldw, w_box_rows(slice)))
    return cudaErrorInvalidValue;
  Params k{};
  k.bias = p.bias, k.c = p.c, k.ldc = p.ldc, k.d = p.d, k.ldd = p.ldd;
  k.rows = int(p.rows), k.slice = slice;
  k.add_c = p.beta == 1.f;
  k.has_act = p.has_act, k.act = p.act;
  const int tiles = int(p.cols / kBN);
  return p.dtype == DType::kFloat16 ? launch_typed<__half>(amap, wmap, k, split, tiles, stream)
                                    : launch_typed<__nv_bfloat16>(amap, wmap, k, split, tiles, stream);
}

bool split_k_product_enabled() {
  const char* e = std::getenv("INGOT_CUDA_OWN_GEMM");
  if (!e || std::strcmp(e, "1") != 0) return false;
  // Built for sm_90a alone (wgmma): compute capability 9.0 exactly.
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
         minor == 0;
}

}  // namespace ingot::cuda
