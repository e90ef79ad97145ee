// ingot.FeedForward in one kernel for at most 128 rows (feed_forward_impl.h): Y = LayerNorm(
// act(X · W1 + b1) · W2 + b2 + X), where the unfused graph ran two cuBLASLt products and a
// LayerNorm, two kernel boundaries that nothing overlaps at batch 1 (cuda_dependent_launch.h).
//
// A cooperative launch of one CTA per 64-row by 48-column tile of G (BERT-base at 128 rows: 2 x 64
// = 128 CTAs, each on its own multiprocessor), 8 warps as 4 row groups of 16 by 2 column groups of
// 24, tensor-core products (mma.sync m16n8k16, fp32 accumulators):
//   1. Each CTA copies its [K x 48] column slice of W1 into shared memory, streams its 64 rows of X
//      through a 5-stage cp.async ring in 64-deep chunks and writes its tile of
//      G = act(X · W1 + b1), rounded to T, to scratch. It then asks for its slice of W2: the rows
//      of one of the N / K K-deep slices, 48 of its columns.                       grid barrier 1
//   2. Each CTA multiplies its 64 rows of G over that K slice by the W2 slice (the same ring) and
//      writes the float32 partial tile to scratch.                                  grid barrier 2
//   3. Row by row over the CTAs: the partials summed in slice order (the same bits every run),
//      plus b2 and X, rounded to T, then the LayerNorm over the row (float32, two passes), Y.
// Every CTA is resident at once (one per multiprocessor, cooperative launch), which the barriers
// on the context's grid counter need; the last CTA to finish sets it back to zero.
// Rounding as the unfused graph's kernels: G and the block's sum rounded to T; for half types
// GELU in its tanh form when FusedMatMul's cuBLASLt epilogue computed it so (the caller passes
// that activation). The products sum in another order than cuBLASLt's.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/feed_forward_impl.h"
#include "backends/cuda/grid_barrier.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/pointwise_activation.cuh"

namespace ingot::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileRows = 64, kTileCols = 48, kChunk = 64, kStages = 5;
constexpr int kWStride = kTileCols + 8;  // halves a weight-slice row takes in shared memory:
                                         // 112 bytes, so ldmatrix's 8 rows hit distinct banks
constexpr int kAStride = kChunk + 8;     // the same for a chunk of 64 rows of X or G
constexpr int kRowVals = 4;              // step 3: K <= kThreads · kRowVals
constexpr size_t kMaxSmem = size_t(220) << 10;  // of the 227 KB a CTA may have, with room for static

struct Params {
  const void *x, *w1, *b1, *w2, *b2, *gamma, *beta;
  void *y, *g;
  float* partials;  // [N / K][rows][K]
  unsigned* counter;
  int rows, K, N, row_blocks;
  float epsilon;
  bool has_act;
  PointwiseActivation act;
  L2Prefetch prefetch;
  bool early_w2;  // W2's slice copied at the start too (launched with dependent launch: before the wait)
};

size_t smem_bytes(int64_t K) { return size_t(2 * K * kWStride + kStages * kTileRows * kAStride) * 2; }

// Rows [row0, row0 + 64) of src (row pitch `pitch` elements), columns [col0, col0 + 64), into one
// ring stage; rows past `rows` read as zeros.
template <class T>
__device__ __forceinline__ void load_chunk(T* stage, const T* src, int64_t pitch, int row0, int rows, int64_t col0) {
  for (int v = int(threadIdx.x); v < kTileRows * (kChunk / 8); v += kThreads) {
    const int r = v >> 3, c = (v & 7) * 8;
    const bool valid = row0 + r < rows;
    cp_async16(smem_addr(stage + r * kAStride + c), src + (valid ? int64_t(row0 + r) * pitch + col0 + c : 0), valid);
  }
}

// Rows [0, K) of src (pitch elements), columns [col0, col0 + 48), into a weight slice.
template <class T>
__device__ __forceinline__ void load_slice(T* slice, const T* src, int64_t pitch, int K, int64_t col0) {
  for (int v = int(threadIdx.x); v < K * (kTileCols / 8); v += kThreads) {
    const int r = v / (kTileCols / 8), c = (v % (kTileCols / 8)) * 8;
    cp_async16(smem_addr(slice + r * kWStride + c), src + int64_t(r) * pitch + col0 + c);
  }
}

// acc += A[64 rows of src, K deep] · slice[K x 48] for this warp's 16 x 24 share, A streamed from
// src (pitch elements, its columns from col0) through the ring. The caller has committed every
// copy it issued before; this waits for them with the ring's first chunk.
template <class T>
__device__ __forceinline__ void tile_product(const T* src, int64_t pitch, int row0, int rows, int64_t col0, int K,
                                             const T* slice, T* ring, float (&acc)[3][4]) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int wr = warp & 3, wc = warp >> 2;
  const int chunks = K / kChunk;
  // kStages - 1 chunks in flight ahead of the one being multiplied: each is a round trip to L2
  // that the products of one chunk (12 mma.sync a warp) are far too short to hide alone.
#pragma unroll
  for (int c = 0; c < kStages - 1; ++c) {
    if (c < chunks) load_chunk(ring + c * kTileRows * kAStride, src, pitch, row0, rows, col0 + int64_t(c) * kChunk);
    cp_async_commit();
  }
  for (int i = 0; i < chunks; ++i) {
    const int next = i + kStages - 1;
    if (next < chunks)
      load_chunk(ring + (next % kStages) * kTileRows * kAStride, src, pitch, row0, rows, col0 + int64_t(next) * kChunk);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // chunk i (and every older copy) has landed
    __syncthreads();
    const T* a_base = ring + (i % kStages) * kTileRows * kAStride;
#pragma unroll
    for (int kk = 0; kk < kChunk / 16; ++kk) {
      uint32_t a[4], b[4], b2[2];
      ldmatrix_x4(a, smem_addr(a_base + (wr * 16 + (lane & 15)) * kAStride + kk * 16 + (lane >> 4) * 8));
      const int k0 = i * kChunk + kk * 16;
      ldmatrix_x4_trans(b, smem_addr(slice + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * kWStride + wc * 24 + (lane >> 4) * 8));
      ldmatrix_x2_trans(b2, smem_addr(slice + (k0 + (lane & 15)) * kWStride + wc * 24 + 16));
      mma16816<T>(acc[0], a, b[0], b[1]);
      mma16816<T>(acc[1], a, b[2], b[3]);
      mma16816<T>(acc[2], a, b2[0], b2[1]);
    }
    __syncthreads();  // the stage is refilled by the copy issued in the next iteration
  }
}

template <class T>
__device__ __forceinline__ void store_pair(T* p, float v0, float v1) {
  T v[2] = {from_float<T>(v0), from_float<T>(v1)};
  *reinterpret_cast<uint32_t*>(p) = *reinterpret_cast<const uint32_t*>(v);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1) feed_forward_block_kernel(const Params p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* w1s = reinterpret_cast<T*>(smem_raw);   // [K][kWStride]
  T* w2s = w1s + size_t(p.K) * kWStride;     // [K][kWStride]
  T* ring = w2s + size_t(p.K) * kWStride;    // [kStages][kTileRows][kAStride]
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int wr = warp & 3, wc = warp >> 2, g = lane >> 2, t4 = lane & 3;
  const int cta = int(blockIdx.x);
  const T* x = static_cast<const T*>(p.x);
  T* gbuf = static_cast<T*>(p.g);
  unsigned arrivals = 0;

  // 1. This CTA's tile of G: rows a_rb · 64, columns a_ct · 48.
  const int a_ct = cta % (p.N / kTileCols), a_rb = cta / (p.N / kTileCols);
  // Step 2's item: K slice b_s, rows b_rb · 64, columns b_ct · 48 of the output.
  const int b_ct = cta % (p.K / kTileCols), b_rest = cta / (p.K / kTileCols);
  const int b_rb = b_rest % p.row_blocks, b_s = b_rest / p.row_blocks;
  const T* w2_slice = static_cast<const T*>(p.w2) + int64_t(b_s) * p.K * p.K;
  // The weights are constant: copied before the wait for the kernel before (a no-op unless this
  // launch is a dependent one).
  load_slice(w1s, static_cast<const T*>(p.w1), p.N, p.K, int64_t(a_ct) * kTileCols);
  cp_async_commit();
  if (p.early_w2) {
    load_slice(w2s, w2_slice, p.K, p.K, int64_t(b_ct) * kTileCols);
    cp_async_commit();
  }
  wait_prior_grids();
  float acc[3][4] = {};
  tile_product(x, p.K, a_rb * kTileRows, p.rows, 0, p.K, w1s, ring, acc);
  {
    const T* b1 = static_cast<const T*>(p.b1);
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const int col = a_ct * kTileCols + wc * 24 + j * 8 + 2 * t4;
      const float c0 = b1 ? to_float(b1[col]) : 0.f, c1 = b1 ? to_float(b1[col + 1]) : 0.f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = a_rb * kTileRows + wr * 16 + g + 8 * h;
        if (row >= p.rows) continue;
        float v0 = acc[j][2 * h] + c0, v1 = acc[j][2 * h + 1] + c1;
        if (p.has_act) v0 = activate(v0, p.act), v1 = activate(v1, p.act);
        store_pair(gbuf + int64_t(row) * p.N + col, v0, v1);
      }
    }
  }
  // Otherwise W2's slice is copied while the grid gathers.
  if (!p.early_w2) {
    load_slice(w2s, w2_slice, p.K, p.K, int64_t(b_ct) * kTileCols);
    cp_async_commit();
  }
  grid_barrier(p.counter, arrivals);

  // 2. The partial tile of G's K slice b_s times W2's.
#pragma unroll
  for (int j = 0; j < 3; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
  tile_product(static_cast<const T*>(gbuf), p.N, b_rb * kTileRows, p.rows, int64_t(b_s) * p.K, p.K, w2s, ring, acc);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const int col = b_ct * kTileCols + wc * 24 + j * 8 + 2 * t4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = b_rb * kTileRows + wr * 16 + g + 8 * h;
      if (row < p.rows)
        *reinterpret_cast<float2*>(p.partials + (int64_t(b_s) * p.rows + row) * p.K + col) =
            make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
    }
  }
  grid_barrier(p.counter, arrivals);

  // 3. Rows: the partials in slice order, b2 and X, rounded; then the LayerNorm. The next steps'
  // weights are asked for here, as the unfused graph's LayerNorm did, once this kernel's own
  // weights no longer need HBM.
  issue_l2_prefetch(p.prefetch);
  const int slices = p.N / p.K;
  const T* b2 = static_cast<const T*>(p.b2);
  const T* gamma = static_cast<const T*>(p.gamma);
  const T* beta = static_cast<const T*>(p.beta);
  for (int r = cta; r < p.rows; r += int(gridDim.x)) {
    float v[kRowVals];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = int(threadIdx.x) + i * kThreads;
      v[i] = 0.f;
      if (k >= p.K) continue;
      float z = 0.f;
      for (int sl = 0; sl < slices; ++sl) z += __ldcg(p.partials + (int64_t(sl) * p.rows + r) * p.K + k);
      z += (b2 ? to_float(b2[k]) : 0.f) + to_float(x[int64_t(r) * p.K + k]);
      v[i] = norm::round_to<T>(z);
      s += v[i];
    }
    const float mean = norm::block_sum(s) / float(p.K);
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < kRowVals; ++i)
      if (int(threadIdx.x) + i * kThreads < p.K) q += (v[i] - mean) * (v[i] - mean);
    const float inv = 1.0f / sqrtf(norm::block_sum(q) / float(p.K) + p.epsilon);
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = int(threadIdx.x) + i * kThreads;
      if (k >= p.K) continue;
      const float y = (v[i] - mean) * inv * to_float(gamma[k]) + (beta ? to_float(beta[k]) : 0.f);
      static_cast<T*>(p.y)[int64_t(r) * p.K + k] = from_float<T>(y);
    }
  }
  release_grid_counter(p.counter, arrivals);
}

struct Scratch {
  size_t partials = 0, total = 0;
  Scratch(int64_t rows, int64_t K, int64_t N) {
    auto up = [](size_t n) { return (n + 255) / 256 * 256; };
    partials = up(size_t(rows * N) * 2);
    total = partials + up(size_t((K > 0 ? N / K : 0) * rows * K) * sizeof(float));
  }
};

int grid_of(int64_t rows, int64_t N) { return int((rows + kTileRows - 1) / kTileRows * (N / kTileCols)); }

template <class T>
cudaError_t launch(const FeedForwardLaunch& a, cudaStream_t stream) {
  const size_t smem = smem_bytes(a.K);
  static const cudaError_t raised =
      cudaFuncSetAttribute(feed_forward_block_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSmem));
  if (raised != cudaSuccess) return raised;
  const Scratch s(a.rows, a.K, a.N);
  Params p{};
  p.x = a.x, p.w1 = a.w1, p.b1 = a.b1, p.w2 = a.w2, p.b2 = a.b2, p.gamma = a.gamma, p.beta = a.beta, p.y = a.y;
  p.g = a.scratch;
  p.partials = reinterpret_cast<float*>(static_cast<std::byte*>(a.scratch) + s.partials);
  p.counter = a.counter;
  p.rows = int(a.rows), p.K = int(a.K), p.N = int(a.N), p.row_blocks = int((a.rows + kTileRows - 1) / kTileRows);
  p.epsilon = a.epsilon, p.has_act = a.has_act, p.act = a.act, p.prefetch = a.prefetch;
  cudaLaunchAttribute attrs[2];
  attrs[0].id = cudaLaunchAttributeCooperative;
  attrs[0].val.cooperative = 1;
  unsigned n = 1;
  // An experiment for developer session 22 (to be measured, then kept or removed with its switch):
  // a dependent launch, the weights copied while the kernel before ends.
  const char* pdl = std::getenv("INGOT_EXP_FFN_PDL");
  if (pdl && std::strcmp(pdl, "1") == 0 && dependent_launch_enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
    p.early_w2 = true;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(grid_of(a.rows, a.N)));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, feed_forward_block_kernel<T>, p);
}

}  // namespace

bool feed_forward_block_fits(DType dtype, int64_t rows, int64_t K, int64_t N, int sm_count) {
  // Chunks of 64 along K; tiles of 48 columns of G and of the output; N / K slices of W2 of K
  // rows each, so that step 2 has as many tiles as step 1 has CTAs.
  return (dtype == DType::kFloat16 || dtype == DType::kBFloat16) && rows >= 1 && rows <= kFeedForwardMaxRows &&
         K > 0 && K % kChunk == 0 && K % kTileCols == 0 && K <= kThreads * kRowVals && N % K == 0 &&
         N % kTileCols == 0 && grid_of(rows, N) <= sm_count && smem_bytes(K) <= kMaxSmem;
}

size_t feed_forward_block_scratch_bytes(int64_t rows, int64_t K, int64_t N) { return Scratch(rows, K, N).total; }

cudaError_t launch_feed_forward_block(const FeedForwardLaunch& a, cudaStream_t stream) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  if (!feed_forward_block_fits(a.dtype, a.rows, a.K, a.N, a.sm_count) || !aligned(a.x) || !aligned(a.w1) ||
      !aligned(a.w2) || !aligned(a.scratch) || !a.counter)
    return cudaErrorInvalidValue;
  return a.dtype == DType::kFloat16 ? launch<__half>(a, stream) : launch<__nv_bfloat16>(a, stream);
}

}  // namespace ingot::cuda
