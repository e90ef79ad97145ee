// The skinny GEMM (lt_gemm_skinny.h): tensor-core tiles (mma.sync m16n8k16, fp32 accumulators,
// operands through ldmatrix from shared memory filled by a 4-stage cp.async pipeline), K split
// over the CTAs of one thread-block cluster, partial tiles summed through distributed shared
// memory.
//
// Tiles. A CTA computes a 128 × 64 tile of C over its slice of K, in steps of 32; its 4 warps each
// own 64 rows × 32 columns (4 × 4 mma tiles, 64 accumulators per thread). Rows of A past M, and
// columns of W past N, are read as zeros (cp.async with a zero source size) and never stored.
//
// Split K. Grid (N/64, M/128, splits) with cluster (1, 1, splits): the CTAs of a cluster share one
// C tile and take consecutive K slices. Each writes its float32 partial tile to its own shared
// memory (reusing the pipeline buffers); after a cluster barrier CTA r sums rows r·128/splits ..
// of all the partials (its peers' through DSMEM), applies bias and activation and stores them; a
// second barrier keeps every CTA's shared memory alive until its peers are done reading it.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/lt_gemm_skinny.h"

namespace ingot::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kBM = 128, kBN = 64, kBK = 32, kStages = 4, kThreads = 128, kMaxSplits = 8;
constexpr int kAStride = kBK + 8;  // halves per A row in shared memory: 80 bytes, ldmatrix conflict-free
constexpr int kWStride = kBN + 8;  // halves per W row: 144 bytes, likewise
constexpr int kAStage = kBM * kAStride, kWStage = kBK * kWStride;
constexpr int kRedStride = kBN + 4;  // floats per row of the partial tile
constexpr size_t kPipelineBytes = size_t(kStages) * (kAStage + kWStage) * 2;
constexpr size_t kReduceBytes = size_t(kBM) * kRedStride * 4;
constexpr size_t kSmemBytes = kPipelineBytes > kReduceBytes ? kPipelineBytes : kReduceBytes;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, or 16 zero bytes when !valid (then `src` is not read).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
template <class T> __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

struct Params {
  const uint16_t* a;
  const uint16_t* w;
  const void* bias;
  void* c;
  int m, n, k, k_slice;  // k_slice: K per CTA, a multiple of kBK
  SkinnyActivation act;
};

template <class T> __device__ __forceinline__ float epilogue(float v, const Params& p, int col) {
  if (p.bias) v += to_float(static_cast<const T*>(p.bias)[col]);
  switch (p.act) {
    case SkinnyActivation::kRelu: return fmaxf(v, 0.f);
    case SkinnyActivation::kGeluTanh: {
      // cuBLASLt's GELU epilogue formula (the tanh form), so either path gives the same function
      const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      return 0.5f * v * (1.f + tanhf(u));
    }
    default: return v;
  }
}

// Stage s of the pipeline: A rows [m0, m0 + 128) and W rows [k0, k0 + 32), columns [n0, n0 + 64).
__device__ __forceinline__ void load_stage(const Params& p, uint16_t* as, uint16_t* ws, int m0, int n0, int k0,
                                           int k_end) {
  const int tid = int(threadIdx.x);
#pragma unroll
  for (int i = 0; i < kBM * kBK / 8 / kThreads; ++i) {  // 4 chunks of 8 halves per thread
    const int c = tid + i * kThreads, r = c >> 2, kc = (c & 3) * 8;
    const bool valid = m0 + r < p.m && k0 + kc < k_end;
    const uint16_t* src = p.a + (valid ? int64_t(m0 + r) * p.k + k0 + kc : 0);
    cp_async16(smem_addr(as + r * kAStride + kc), src, valid);
  }
#pragma unroll
  for (int i = 0; i < kBK * kBN / 8 / kThreads; ++i) {  // 2 chunks per thread
    const int c = tid + i * kThreads, r = c >> 3, nc = (c & 7) * 8;
    const bool valid = k0 + r < k_end && n0 + nc < p.n;
    const uint16_t* src = p.w + (valid ? int64_t(k0 + r) * p.n + n0 + nc : 0);
    cp_async16(smem_addr(ws + r * kWStride + nc), src, valid);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) skinny_gemm_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* a_smem = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* w_smem = a_smem + kStages * kAStage;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  const int warp_m = (warp & 1) * 64, warp_n = (warp >> 1) * 32;
  const int n0 = int(blockIdx.x) * kBN, m0 = int(blockIdx.y) * kBM;
  const int k_begin = int(blockIdx.z) * p.k_slice, k_end = min(p.k, k_begin + p.k_slice);
  const int steps = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_stage(p, a_smem + s * kAStage, w_smem + s * kWStage, m0, n0, k_begin + s * kBK, k_end);
    cp_async_commit();
  }
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `step` is in place; every warp is done with the stage refilled below
    const int next = step + kStages - 1;
    if (next < steps)
      load_stage(p, a_smem + (next % kStages) * kAStage, w_smem + (next % kStages) * kWStage, m0, n0,
                 k_begin + next * kBK, k_end);
    cp_async_commit();
    const uint16_t* as = a_smem + (step % kStages) * kAStage;
    const uint16_t* ws = w_smem + (step % kStages) * kWStage;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t af[4][4], bf[2][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], smem_addr(as + (warp_m + 16 * i + (lane & 15)) * kAStride + kk + (lane >> 4) * 8));
#pragma unroll
      for (int jp = 0; jp < 2; ++jp)  // column tiles 2jp and 2jp + 1
        ldmatrix_x4_trans(bf[jp], smem_addr(ws + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * kWStride + warp_n +
                                            16 * jp + (lane >> 4) * 8));
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int jp = 0; jp < 2; ++jp) {
          mma16816<T>(acc[i][2 * jp], af[i], bf[jp][0], bf[jp][1]);
          mma16816<T>(acc[i][2 * jp + 1], af[i], bf[jp][2], bf[jp][3]);
        }
    }
  }
  cp_async_wait<0>();

  const int g = lane >> 2, t4 = lane & 3;
  T* c = static_cast<T*>(p.c);
  if (gridDim.z == 1) {  // no split: registers straight to C
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = n0 + warp_n + 8 * j + 2 * t4;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + warp_m + 16 * i + g + 8 * h;
          if (row >= p.m || col >= p.n) continue;
          const float v0 = epilogue<T>(acc[i][j][2 * h], p, col), v1 = epilogue<T>(acc[i][j][2 * h + 1], p, col + 1);
          T pair[2] = {from_float<T>(v0), from_float<T>(v1)};
          *reinterpret_cast<uint32_t*>(c + int64_t(row) * p.n + col) = *reinterpret_cast<uint32_t*>(pair);
        }
      }
    return;
  }

  // Split K: partial tile to shared memory, then each CTA of the cluster reduces a band of rows.
  __syncthreads();  // the pipeline buffers become the partial tile
  float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp_m + 16 * i + g + 8 * h, col = warp_n + 8 * j + 2 * t4;
        *reinterpret_cast<float2*>(red + r * kRedStride + col) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
      }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int splits = int(cluster.num_blocks()), rank = int(cluster.block_rank());
  const int quads = kBM * kBN / 4, q_begin = rank * quads / splits, q_end = (rank + 1) * quads / splits;
  for (int q = q_begin + int(threadIdx.x); q < q_end; q += kThreads) {
    const int r = q / (kBN / 4), col = (q % (kBN / 4)) * 4, row = m0 + r, gcol = n0 + col;
    if (row >= p.m || gcol >= p.n) continue;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int peer = 0; peer < splits; ++peer) {
      const float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(red, peer) + r * kRedStride + col);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    T out[4] = {from_float<T>(epilogue<T>(sum.x, p, gcol)), from_float<T>(epilogue<T>(sum.y, p, gcol + 1)),
                from_float<T>(epilogue<T>(sum.z, p, gcol + 2)), from_float<T>(epilogue<T>(sum.w, p, gcol + 3))};
    // N is a multiple of 8, so a quad of columns is either wholly inside or wholly outside
    *reinterpret_cast<uint2*>(c + int64_t(row) * p.n + gcol) = *reinterpret_cast<uint2*>(out);
  }
  cluster.sync();  // peers may still be reading this CTA's partial tile
}

template <class T>
cudaError_t launch_typed(const Params& p, int splits, cudaStream_t stream) {
  static const cudaError_t raised =
      cudaFuncSetAttribute(skinny_gemm_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes));
  if (raised != cudaSuccess) return raised;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned((p.n + kBN - 1) / kBN), unsigned((p.m + kBM - 1) / kBM), unsigned(splits));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = unsigned(splits);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, skinny_gemm_kernel<T>, p);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool skinny_gemm_supported(const SkinnyGemmArgs& a) {
  return (a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16) && a.m > 0 && a.n > 0 && a.k > 0 &&
         a.n % 8 == 0 && a.k % 8 == 0 && a.m <= INT_MAX / 2 && a.n <= INT_MAX / 2 && a.k <= INT_MAX / 2 &&
         a.m * a.k <= INT64_MAX / 2 && aligned16(a.a) && aligned16(a.w) && aligned16(a.c) &&
         (!a.bias || aligned16(a.bias));
}

int skinny_gemm_splits(int64_t m, int64_t n, int64_t k, int sm_count) {
  const int64_t tiles = ((n + kBN - 1) / kBN) * ((m + kBM - 1) / kBM);
  const int64_t k_steps = (k + kBK - 1) / kBK;
  int64_t splits = (std::max<int64_t>(sm_count, 1) + tiles - 1) / tiles;
  // At least 4 K steps per CTA, so the pipeline has something to overlap.
  splits = std::min<int64_t>({splits, int64_t(kMaxSplits), std::max<int64_t>(1, k_steps / 4)});
  return int(std::max<int64_t>(splits, 1));
}

cudaError_t launch_skinny_gemm(const SkinnyGemmArgs& a, cudaStream_t stream) {
  if (!skinny_gemm_supported(a) || a.splits < 1 || a.splits > kMaxSplits) return cudaErrorInvalidValue;
  const int64_t k_steps = (a.k + kBK - 1) / kBK;
  const int64_t steps_per_split = (k_steps + a.splits - 1) / a.splits;
  Params p{static_cast<const uint16_t*>(a.a), static_cast<const uint16_t*>(a.w), a.bias, a.c, int(a.m), int(a.n),
           int(a.k), int(steps_per_split * kBK), a.activation};
  if ((a.m + kBM - 1) / kBM > 65535) return cudaErrorInvalidConfiguration;
  return a.dtype == DType::kFloat16 ? launch_typed<__half>(p, a.splits, stream)
                                    : launch_typed<__nv_bfloat16>(p, a.splits, stream);
}

}  // namespace ingot::cuda
