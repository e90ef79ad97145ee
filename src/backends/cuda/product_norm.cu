// The product with its LayerNorm in the epilogue (product_norm_impl.h has the contract), for
// sm_90a: one 128 x 192 tile a CTA, warp-specialized.
//
//   warpgroup 0, one thread: the copy engine's tensor copies of A's [128 x 64] and W's three
//       [64 x 64] boxes a K step into kStages 128-byte-swizzled stages (A evict-first, W
//       evict-last in L2), and, once the first stages are asked for, the residual's tile into
//       the staging boxes that the output leaves from;
//   warpgroups 1 and 2: rows 0-63 and 64-127, one wgmma m64n192k16 per 16 of K (W MN-major,
//       as the graph stores it: no transposed copy), then the epilogue:
//         v = rounded(acc + bias + residual)   (what the unfused product would have stored)
//         each row's mean and centered sum of squares over the tile's 192 columns (registers,
//           quad shuffles), out to the exchange; the row block's CTAs meet on their counter;
//         Chan's combination of the N / 192 pairs (no cancellation);
//         y = (v - mean) · rsqrt(M2 / N + eps) · gamma + beta, rounded once, written over the
//           residual in the staging boxes and stored by the copy engine.
//
// Measured against cuBLASLt + ingot's LayerNorm kernel at BERT-base's b32 shapes (H200,
// developer session 34, bench/ws_gemm_bench.cu): 4096 x 768 x 768 13.6 against 15.4 us,
// 4096 x 768 x 3072 35.1 against 37.6 us.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/half_pair.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/product_norm_impl.h"
#include "backends/cuda/wgmma.cuh"
#include "backends/cuda/wgmma_stages.cuh"

namespace ingot::cuda {
namespace {

constexpr int kBM = int(kProductNormTileRows), kBN = int(kProductNormTileCols), kBK = 64, kStages = 4;
constexpr int kThreads = 384, kMaxN = int(kProductNormMaxN), kMaxBlocks = kMaxN / kBN;
static_assert(kMaxN <= 8 * 256, "the 256 consumer threads load bias, gamma and beta 8 elements each");
constexpr uint32_t kBoxBytes = 64 * 64 * 2, kABytes = kBM * kBK * 2, kWBytes = kBN * kBK * 2;
constexpr size_t kSmemBytes = 1024 + size_t(kStages) * (kABytes + kWBytes) + size_t(kBM) * kBN * 2;

struct Params {
  const void *bias, *gamma, *beta;  // [N]; bias and beta may be null
  bool residual, params_constant;
  int N, K;
  float epsilon;
  float2* exchange;    // [row blocks · 128, N / 192]
  unsigned* counters;  // [row blocks]
  L2Prefetch prefetch;
};

// The staging address for swizzled_x4_at's blocks of consumer warpgroup c (its three boxes at
// c · 3 of six), rows 16·warp + 8·r2 .. + 7.
__device__ __forceinline__ uint32_t staging_at(uint32_t stg, int c, int j4, int r2, int warp, int lane) {
  return swizzled_x4_at(stg + uint32_t(c * (kBN / 64)) * kBoxBytes, kBoxBytes, j4, warp * 16 + 8 * r2, lane);
}

// Consumer thread `ct`'s 16 bytes of a parameter vector of n <= 2048 (a multiple of 8): elements
// 8·ct .. + 7; zeros when absent or past n. Loaded before the products, stored after them, so
// that their latency hides under the products.
template <class T>
__device__ __forceinline__ uint4 load_param(const void* src, int n, int ct) {
  if (!src || 8 * ct >= n) return uint4{0u, 0u, 0u, 0u};
  return __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(src) + 8 * ct));
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    product_norm_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tw,
                        const __grid_constant__ CUtensorMap ty, const __grid_constant__ CUtensorMap tr,
                        const Params p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, ws = base + kStages * kABytes, stg = ws + kStages * kWBytes;
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages], residual_in;
  __shared__ __align__(16) T bias_s[kMaxN], gamma_s[kMaxN], beta_s[kMaxN];
  const int tid = int(threadIdx.x), wg = tid / 128;
  const int blocks = p.N / kBN, m0 = int(blockIdx.x) / blocks * kBM, n0 = int(blockIdx.x) % blocks * kBN;
  const int KT = (p.K + kBK - 1) / kBK;

  if (tid == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&ta)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tw)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&ty)) : "memory");
    if (p.residual) asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tr)) : "memory");
    for (int s = 0; s < kStages; ++s) mbar_init(smem_addr(&full[s])), mbar_init(smem_addr(&empty[s]), 2);
    mbar_init(smem_addr(&residual_in));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid != 0) return;
    wait_prior_grids();
    const uint64_t once = l2_evict_first_policy(), again = l2_evict_last_policy();
    for (int kt = 0; kt < KT; ++kt) {
      const int s = kt % kStages;
      const uint32_t fb = smem_addr(&full[s]);
      if (kt >= kStages) mbar_wait_parity(smem_addr(&empty[s]), ((kt / kStages) & 1) ^ 1);
      mbar_expect_tx(fb, kABytes + kWBytes);
      tensor_copy_hint(as + s * kABytes, &ta, kt * kBK, m0, fb, once);
      for (int b = 0; b < kBN / 64; ++b)
        tensor_copy_hint(ws + s * kWBytes + b * kBoxBytes, &tw, n0 + 64 * b, kt * kBK, fb, again);
      if (p.residual && kt == (kStages < KT ? kStages : KT) - 1) {
        const uint32_t rb = smem_addr(&residual_in);
        mbar_expect_tx(rb, uint32_t(kBM * kBN * 2));
        for (int c = 0; c < 2; ++c)
          for (int b = 0; b < kBN / 64; ++b)
            tensor_copy_hint(stg + uint32_t(c * (kBN / 64) + b) * kBoxBytes, &tr, n0 + 64 * b, m0 + 64 * c, rb, once);
      }
    }
    issue_l2_prefetch(p.prefetch);
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int c = wg - 1, lt = tid % 128, warp = lt / 32, lane = lt % 32, g = lane / 4, t4 = lane % 4;
  // bias, gamma and beta into registers (before the wait for the kernel before when they are the
  // plan's constants), into shared memory once the products are done.
  const int ct = tid - 128;
  if (!p.params_constant) wait_prior_grids();
  const uint4 bias_r = load_param<T>(p.bias, p.N, ct), gamma_r = load_param<T>(p.gamma, p.N, ct),
              beta_r = load_param<T>(p.beta, p.N, ct);
  if (p.params_constant) wait_prior_grids();
  float acc[kBN / 2];
  int it = 0;
  wgmma_k_steps<T, kBN, kStages>(acc, KT, it, as + c * 64 * 128, kABytes, ws, kWBytes, kBoxBytes, full, empty, lt == 0);
  if (8 * ct < p.N) {
    *reinterpret_cast<uint4*>(bias_s + 8 * ct) = bias_r;
    *reinterpret_cast<uint4*>(gamma_s + 8 * ct) = gamma_r;
    *reinterpret_cast<uint4*>(beta_s + 8 * ct) = beta_r;
  }
  asm volatile("bar.sync 1, 256;" ::: "memory");
  if (p.residual) mbar_wait_parity(smem_addr(&residual_in), 0);

  // v = rounded(acc + bias + residual); the row's mean over the tile's columns.
  float mean[2] = {0.f, 0.f}, m2[2] = {0.f, 0.f};
#pragma unroll
  for (int j4 = 0; j4 < kBN / 32; ++j4)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      uint32_t res[4] = {0u, 0u, 0u, 0u};
      if (p.residual) ldmatrix_x4(res, staging_at(stg, c, j4, r2, warp, lane));
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) {
        const int j = 4 * j4 + jq, col = n0 + 8 * j + 2 * t4;
        const float2 b = unpack2<T>(*reinterpret_cast<const uint32_t*>(bias_s + col)), r = unpack2<T>(res[jq]);
        const float2 v = unpack2<T>(pack2<T>(acc[4 * j + 2 * r2] + b.x + r.x, acc[4 * j + 2 * r2 + 1] + b.y + r.y));
        acc[4 * j + 2 * r2] = v.x, acc[4 * j + 2 * r2 + 1] = v.y;
        mean[r2] += v.x + v.y;
      }
    }
#pragma unroll
  for (int r2 = 0; r2 < 2; ++r2) {
    mean[r2] += __shfl_xor_sync(0xffffffffu, mean[r2], 1);
    mean[r2] += __shfl_xor_sync(0xffffffffu, mean[r2], 2);
    mean[r2] *= 1.f / float(kBN);
  }
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      const float d0 = acc[4 * j + 2 * r2] - mean[r2], d1 = acc[4 * j + 2 * r2 + 1] - mean[r2];
      m2[r2] += d0 * d0 + d1 * d1;
    }
  const int row = m0 + c * 64 + warp * 16 + g, nb = n0 / kBN;
#pragma unroll
  for (int r2 = 0; r2 < 2; ++r2) {
    m2[r2] += __shfl_xor_sync(0xffffffffu, m2[r2], 1);
    m2[r2] += __shfl_xor_sync(0xffffffffu, m2[r2], 2);
    if (t4 == 0) p.exchange[size_t(row + 8 * r2) * blocks + nb] = make_float2(mean[r2], m2[r2]);
  }

  unsigned departed = 0;
  // The row block's CTAs meet: after the CTA's barrier one thread's releasing arrival publishes
  // every thread's pairs (cumulativity, as a grid barrier's fence and arrival, without waiting
  // for the arrival's return), its acquiring loads order the peers' before the reads below; its
  // second arrival, once it has seen them all, lets the last one to pass set the counter back to
  // zero for the next launch.
  asm volatile("bar.sync 1, 256;" ::: "memory");
  if (lt == 0 && c == 0) {
    unsigned* counter = p.counters + m0 / kBM;
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    unsigned seen;
    do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    while (seen < unsigned(blocks));
    departed = atomicAdd(counter, 1u);  // its result is needed only at the end
  }
  asm volatile("bar.sync 1, 256;" ::: "memory");

  // Both rows' pairs are loaded before either is combined: one trip to L2, not two.
  float inv[2];
  float2 part[2][kMaxBlocks];
#pragma unroll
  for (int r2 = 0; r2 < 2; ++r2)
#pragma unroll
    for (int b = 0; b < kMaxBlocks; ++b)
      part[r2][b] = b < blocks ? __ldcg(&p.exchange[size_t(row + 8 * r2) * blocks + b]) : make_float2(0.f, 0.f);
#pragma unroll
  for (int r2 = 0; r2 < 2; ++r2) {
    float mu = 0.f, sq = 0.f, dev = 0.f;
#pragma unroll
    for (int b = 0; b < kMaxBlocks; ++b) mu += part[r2][b].x;
    mu /= float(blocks);
#pragma unroll
    for (int b = 0; b < kMaxBlocks; ++b)
      if (b < blocks) sq += part[r2][b].y, dev += (part[r2][b].x - mu) * (part[r2][b].x - mu);
    inv[r2] = rsqrtf((sq + float(kBN) * dev) / float(p.N) + p.epsilon);
    mean[r2] = mu;
  }
#pragma unroll
  for (int j4 = 0; j4 < kBN / 32; ++j4)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      uint32_t h[4];
#pragma unroll
      for (int jq = 0; jq < 4; ++jq) {
        const int j = 4 * j4 + jq, col = n0 + 8 * j + 2 * t4;
        const float2 gm = unpack2<T>(*reinterpret_cast<const uint32_t*>(gamma_s + col));
        const float2 bt = unpack2<T>(*reinterpret_cast<const uint32_t*>(beta_s + col));
        h[jq] = pack2<T>((acc[4 * j + 2 * r2] - mean[r2]) * inv[r2] * gm.x + bt.x,
                         (acc[4 * j + 2 * r2 + 1] - mean[r2]) * inv[r2] * gm.y + bt.y);
      }
      stmatrix_x4(staging_at(stg, c, j4, r2, warp, lane), h);
    }
  // The boxes, written by ordinary stores, go out through the copy engine: proxy fence, the
  // warpgroup's barrier, then one thread stores them and waits until the stores have read them
  // before the CTA (and its shared memory) ends. Not for the writes themselves: the grid's end
  // covers them (as it does for the next kernel's wait_prior_grids), and waiting for their
  // completion held every CTA's end back (BERT-base b32 0.4 % slower, developer session 36).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
  if (lt == 0) {
    for (int b = 0; b < kBN / 64; ++b) tensor_store(&ty, n0 + 64 * b, m0 + 64 * c, stg + uint32_t(c * (kBN / 64) + b) * kBoxBytes);
    bulk_commit();
    if (c == 0 && departed == unsigned(2 * blocks - 1)) atomicExch(p.counters + m0 / kBM, 0u);
    bulk_wait_read();
  }
}

int64_t row_blocks(int64_t M) { return (M + kBM - 1) / kBM; }

template <class T>
cudaError_t launch(const ProductNormLaunch& a, cudaStream_t stream) {
  static const cudaError_t raised = cudaFuncSetAttribute(
      product_norm_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes));
  if (raised != cudaSuccess) return raised;
  CUtensorMap ta{}, tw{}, ty{}, tr{};
  if (!encode_tensor_map(&ta, a.dtype, a.a, a.M, a.K, a.K, kBM, kBK, true) ||
      !encode_tensor_map(&tw, a.dtype, a.w, a.K, a.N, a.N, kBK, 64, true) ||
      !encode_tensor_map(&ty, a.dtype, a.y, a.M, a.N, a.N, 64, 64, true) ||
      (a.residual && !encode_tensor_map(&tr, a.dtype, a.residual, a.M, a.N, a.N, 64, 64, true)))
    return cudaErrorInvalidValue;
  Params p{};
  p.bias = a.bias, p.gamma = a.gamma, p.beta = a.beta, p.residual = a.residual != nullptr;
  p.params_constant = a.params_constant;
  p.N = int(a.N), p.K = int(a.K), p.epsilon = a.epsilon;
  p.exchange = static_cast<float2*>(a.exchange), p.counters = a.counters, p.prefetch = a.prefetch;
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  attrs[n].id = cudaLaunchAttributeCooperative;  // the row blocks' CTAs wait for each other
  attrs[n++].val.cooperative = 1;
  if (dependent_launch_enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(row_blocks(a.M) * (a.N / kBN)));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmemBytes;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, product_norm_kernel<T>, ta, tw, ty, tr, p);
}

}  // namespace

size_t product_norm_exchange_bytes(int64_t M, int64_t N) {
  return size_t(row_blocks(M) * kBM * (N / kBN)) * sizeof(float2);
}

bool product_norm_fits(DType dtype, int64_t M, int64_t N, int64_t K, int sm_count, int cc_major, int cc_minor) {
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  if (cc_major != 9 || cc_minor != 0 || sm_count <= 0) return false;
  if (N <= 0 || N % kBN != 0 || N > kMaxN || K <= 0 || K % 8 != 0 || M <= 0) return false;
  const int64_t tiles = row_blocks(M) * (N / kBN);
  return tiles <= sm_count && 4 * tiles >= 3 * int64_t(sm_count);
}

cudaError_t launch_product_norm(const ProductNormLaunch& a, cudaStream_t stream) {
  if (!a.a || !a.w || !a.gamma || !a.y || !a.exchange || !a.counters) return cudaErrorInvalidValue;
  switch (a.dtype) {
    case DType::kFloat16: return launch<__half>(a, stream);
    case DType::kBFloat16: return launch<__nv_bfloat16>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ingot::cuda
