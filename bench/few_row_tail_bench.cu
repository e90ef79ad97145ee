// Prototype and benchmark: a classifier's last transformer layer on its few gathered rows (the
// token each sequence is classified by, after gather_rows_early) as ONE cooperative kernel,
// against the kernels an ingot engine runs for it today (cuBLASLt products, LayerNorm kernels,
// the skinny classifier), each in a CUDA graph.
//
// Why: at batch 1 that tail is 7-8 kernels of ~4 us each in the graph (latency, not work: its
// weights are 11.8 MB, 4 us of HBM), about a sixth of DistilBERT's 0.21 ms. One resident grid
// can instead load every weight tile it will need at its start (weights do not depend on the
// data, and a CTA's share fits its shared memory) and walk the phases with grid barriers:
//   1 out-projection   partial sums of ctx · Wo per (64-column block, K slice)
//   2 LayerNorm        h1 = LN(round(sum + bo + residual))            one CTA per row
//   3 FFN1             partial sums of h1 · W1
//   4 FFN2             partial sums of round(gelu(sum + b1)) · W2     (the GELU applied as A loads)
//   5 LayerNorm        h2 = LN(round(sum + b2 + h1))
//   6 head dense       partial sums of h2 · Wp
//   7 classifier       logits = round(act(sum + bp)) · Wc + bc        (act: ReLU for DistilBERT's
//                                                                      pre_classifier, tanh for BERT's pooler)
// Rounding points are those of the kernels it replaces (float16 after each product's epilogue).
//
// It prints both variants' GPU time (median of graph replays between CUDA events; weights hot
// in L2, and cold: a 96 MB buffer rewritten before each replay), that of the same grid doing
// nothing but its six barriers (the floor of this structure), and both variants' largest
// differences from a float64 host reference. Nothing in the engine uses this kernel yet: this program says
// whether it should.
//
//   few_row_tail_bench [--rows 1,32] [--iters 500] [--layer]
// --layer stops after the second LayerNorm: an encoder layer's side after attention, as a whole
// layer at batch 1 runs it (--rows 128), the direction of one kernel per layer at batch 1.
// on the GPU machine, from the pack: scripts/gpu-check.sh --unpack-to /tmp/p >/dev/null && /tmp/p/few_row_tail_bench
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/elementwise_impl.h"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/norm_impl.h"

namespace cg = cooperative_groups;
using namespace ingot;
using namespace ingot::cuda;

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "few_row_tail_bench: %s: %s\n", #x, cudaGetErrorString(e_));        \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace {

void check_status(const Status& st) {
  if (st) return;
  std::fprintf(stderr, "few_row_tail_bench: %s\n", st.message().c_str());
  std::exit(1);
}

constexpr int kThreads = 256;   // 8 warps
constexpr int kCols = 64;       // output columns of a product tile
constexpr int kMaxRows = 128;   // rows the kernel takes (eight m16 blocks)
constexpr int kMaxClasses = 8;
constexpr int kWStride = kCols + 8;  // halves per W tile row in shared memory (+8: ldmatrix without bank conflicts)

struct Product {
  const __half* w = nullptr;  // [K, N] row-major
  int K = 0, N = 0;
  int kslice = 0, slices = 0, nblocks = 0;  // tile t: column block t % nblocks, K slice t / nblocks
  float* partial = nullptr;                 // [slices][rows][N]
  int smem = 0;                             // byte offset of this product's W tile
  __host__ __device__ int tiles() const { return nblocks * slices; }
};

struct TailParams {
  int rows = 0;
  const __half* ctx = nullptr;  // [rows, K0], pitch ld_ctx
  int64_t ld_ctx = 0;
  const __half* residual = nullptr;  // [rows, E], pitch ld_res (rows of the whole sequence)
  int64_t ld_res = 0;
  Product p[4];  // out-projection, FFN1, FFN2, head dense
  const __half *bo, *b1, *b2, *bp, *g1, *be1, *g2, *be2, *wc, *bc;
  float eps = 1e-12f;
  __half *h1, *h2;  // [rows, E]
  float* logits;    // [rows, classes]
  int classes = 2;
  int tanh_head = 0;
  int head = 1;  // 0: stop after the second LayerNorm (--layer: one whole encoder layer's FFN side)
  int a_smem = 0, a_stride = 0, red_smem = 0;
};

__device__ __forceinline__ float round_half(float v) { return __half2float(__float2half_rn(v)); }
// cuBLASLt's GELU epilogue (tanh form).
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// This CTA's tile of every product: its W rows [k0, k0 + kn) x its 64 columns, into shared
// memory, one commit group per product (phase q waits for group q only).
__device__ void prefetch_weights(const TailParams& p, unsigned char* smem) {
  for (int q = 0; q < 4; ++q) {
    const Product& d = p.p[q];
    const int t = int(blockIdx.x);
    if (t < d.tiles()) {
      const int nb = t % d.nblocks, s = t / d.nblocks, k0 = s * d.kslice, kn = min(d.kslice, d.K - k0);
      __half* dst = reinterpret_cast<__half*>(smem + d.smem);
      for (int i = int(threadIdx.x); i < kn * (kCols / 8); i += kThreads) {
        const int r = i / (kCols / 8), c = i % (kCols / 8);
        const __half* src = d.w + int64_t(k0 + r) * d.N + nb * kCols + c * 8;
        cp_async16(smem_addr(dst + r * kWStride + c * 8), src);
      }
    }
    cp_async_commit();
  }
}

// Sum of product q's partials at (row m, column c).
__device__ __forceinline__ float partial_sum(const TailParams& p, const Product& d, int m, int c) {
  float v = 0.f;
  for (int s = 0; s < d.slices; ++s) v += d.partial[(int64_t(s) * p.rows + m) * d.N + c];
  return v;
}

// Partial sums of one product tile: A rows [0, rows) x the tile's K slice, through mma.sync.
// kGeluA: A is round(gelu(sum of product `src`'s partials + bias)) (FFN2 reading FFN1), else a
// float16 matrix. kMB: m16 blocks of rows (1, 2, 4 or 8: up to 128 rows), a template parameter
// so the accumulators stay in registers. A is staged kAChunk columns at a time.
constexpr int kAChunk = 64;
template <bool kGeluA, int kMB>
__device__ void product_tile(const TailParams& p, int q, const __half* a, int64_t lda, const Product* src,
                             const __half* src_bias, unsigned char* smem) {
  const Product& d = p.p[q];
  const int t = int(blockIdx.x);
  if (t >= d.tiles()) return;
  const int nb = t % d.nblocks, s = t / d.nblocks, k0 = s * d.kslice, kn = min(d.kslice, d.K - k0);
  __half* as = reinterpret_cast<__half*>(smem + p.a_smem);
  // Warp w: columns 16·(w % 4) .. +16 (two n8 tiles), every other 16-deep k step from w / 4.
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31, npair = warp & 3, khalf = warp >> 2;
  const __half* ws = reinterpret_cast<const __half*>(smem + d.smem);
  float acc[kMB][2][4] = {};
  for (int c0 = 0; c0 < kn; c0 += kAChunk) {
    const int cn = min(kAChunk, kn - c0);
    if (c0 > 0) __syncthreads();  // the previous chunk is consumed
    for (int i = int(threadIdx.x); i < kMB * 16 * (cn / 8); i += kThreads) {
      const int m = i / (cn / 8), c8 = i % (cn / 8), k = k0 + c0 + c8 * 8;
      __align__(16) __half v[8];
      if (m < p.rows) {
        if constexpr (kGeluA) {
#pragma unroll
          for (int j = 0; j < 8; ++j)
            v[j] = __float2half_rn(gelu_tanh(partial_sum(p, *src, m, k + j) + __half2float(src_bias[k + j])));
        } else {
          *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(a + int64_t(m) * lda + k);
        }
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = __float2half_rn(0.f);
      }
      *reinterpret_cast<uint4*>(as + m * p.a_stride + c8 * 8) = *reinterpret_cast<const uint4*>(v);
    }
    __syncthreads();
    for (int ks = khalf; ks < cn / 16; ks += 2) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, smem_addr(ws + ((c0 / 16 + ks) * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kWStride +
                                     npair * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int mb = 0; mb < kMB; ++mb) {
        uint32_t af[4];
        ldmatrix_x4(af, smem_addr(as + (mb * 16 + (lane & 15)) * p.a_stride + ks * 16 + (lane >> 4) * 8));
        mma16816<__half>(acc[mb][0], af, b[0], b[1]);
        mma16816<__half>(acc[mb][1], af, b[2], b[3]);
      }
    }
  }
  // The odd k steps' warps hand their sums to the even ones through shared memory.
  float* red = reinterpret_cast<float*>(smem + p.red_smem) + npair * (kMB * 2 * 4 * 32);
  if (khalf == 1) {
#pragma unroll
    for (int i = 0; i < kMB * 8; ++i) red[i * 32 + lane] = (&acc[0][0][0])[i];
  }
  __syncthreads();
  if (khalf == 0) {
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int m = mb * 16 + g + 8 * (e >> 1), c = nb * kCols + npair * 16 + j * 8 + 2 * t4 + (e & 1);
          if (m < p.rows)
            d.partial[(int64_t(s) * p.rows + m) * d.N + c] = acc[mb][j][e] + red[((mb * 2 + j) * 4 + e) * 32 + lane];
        }
  }
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) t += scratch[w];
  return t;
}

// out[m] = LN(round(sum of product q's partials + bias + residual[m])), one CTA per row.
__device__ void layer_norm_rows(const TailParams& p, int q, const __half* bias, const __half* res, int64_t ld_res,
                                const __half* gamma, const __half* beta, __half* out, unsigned char* smem) {
  const Product& d = p.p[q];
  const int m = int(blockIdx.x);
  if (m >= p.rows) return;
  float* scratch = reinterpret_cast<float*>(smem + p.red_smem);
  constexpr int kPer = 4;  // columns a thread holds (N <= 1024)
  float v[kPer];
  float s = 0.f;
  for (int i = 0; i < kPer; ++i) {
    const int c = int(threadIdx.x) + i * kThreads;
    v[i] = c < d.N ? round_half(partial_sum(p, d, m, c) + __half2float(bias[c]) + __half2float(res[int64_t(m) * ld_res + c]))
                   : 0.f;
    s += v[i];
  }
  const float mean = block_sum(s, scratch) / float(d.N);
  float sq = 0.f;
  for (int i = 0; i < kPer; ++i)
    if (int(threadIdx.x) + i * kThreads < d.N) sq += (v[i] - mean) * (v[i] - mean);
  const float inv = rsqrtf(block_sum(sq, scratch) / float(d.N) + p.eps);
  for (int i = 0; i < kPer; ++i) {
    const int c = int(threadIdx.x) + i * kThreads;
    if (c < d.N)
      out[int64_t(m) * d.N + c] = __float2half_rn((v[i] - mean) * inv * __half2float(gamma[c]) + __half2float(beta[c]));
  }
}

// logits[m] = round(act(sum of the head dense's partials + bp)) · Wc + bc, one CTA per row.
__device__ void classify_rows(const TailParams& p, unsigned char* smem) {
  const Product& d = p.p[3];
  const int m = int(blockIdx.x);
  if (m >= p.rows) return;
  float* scratch = reinterpret_cast<float*>(smem + p.red_smem);
  float acc[kMaxClasses] = {};
  for (int c = int(threadIdx.x); c < d.N; c += kThreads) {
    const float z = partial_sum(p, d, m, c) + __half2float(p.bp[c]);
    const float x = round_half(p.tanh_head ? tanhf(z) : fmaxf(z, 0.f));
    for (int j = 0; j < p.classes; ++j) acc[j] += x * __half2float(p.wc[int64_t(c) * p.classes + j]);
  }
  for (int j = 0; j < p.classes; ++j) {
    const float total = block_sum(acc[j], scratch);
    if (threadIdx.x == 0) p.logits[m * p.classes + j] = total + __half2float(p.bc[j]);
  }
}

template <int kMB>
__global__ void __launch_bounds__(kThreads, 1) tail_kernel(const TailParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  cg::grid_group grid = cg::this_grid();
  prefetch_weights(p, smem);
  cp_async_wait<3>();
  product_tile<false, kMB>(p, 0, p.ctx, p.ld_ctx, nullptr, nullptr, smem);
  grid.sync();
  layer_norm_rows(p, 0, p.bo, p.residual, p.ld_res, p.g1, p.be1, p.h1, smem);
  grid.sync();
  cp_async_wait<2>();
  product_tile<false, kMB>(p, 1, p.h1, p.p[1].K, nullptr, nullptr, smem);
  grid.sync();
  cp_async_wait<1>();
  product_tile<true, kMB>(p, 2, nullptr, 0, &p.p[1], p.b1, smem);
  grid.sync();
  layer_norm_rows(p, 2, p.b2, p.h1, p.p[2].N, p.g2, p.be2, p.h2, smem);
  if (!p.head) return;
  grid.sync();
  cp_async_wait<0>();
  product_tile<false, kMB>(p, 3, p.h2, p.p[3].K, nullptr, nullptr, smem);
  grid.sync();
  classify_rows(p, smem);
}

// The same grid and barriers with no work: the floor of the fused kernel's phase structure.
__global__ void __launch_bounds__(kThreads, 1) barriers_kernel(int barriers) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < barriers; ++i) grid.sync();
}

// ---- host side

// A launch of `kernel` over one CTA per SM that may wait on grid barriers (cooperative: every
// CTA resident at once, or the launch fails).
template <class... Args>
cudaError_t launch_cooperative(void (*kernel)(Args...), int sm_count, int smem, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(sm_count));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = size_t(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

struct TailModel {
  int E = 768, F = 3072, C = 2;
  bool tanh_head = false;
  const char* name = "DistilBERT";
};

std::vector<__half> random_halves(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<__half> v(n);
  for (auto& x : v) x = __float2half_rn(u(rng));
  return v;
}

template <class T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

float h2f(__half h) { return __half2float(h); }
float rnd(double v) { return __half2float(__float2half_rn(float(v))); }

struct HostTail {
  std::vector<__half> ctx, seq, wo, bo, g1, be1, w1, b1, w2, b2, g2, be2, wp, bp, wc, bc;
};

// The float64 reference, with the kernels' float16 rounding points: h2 and the logits.
struct Reference {
  std::vector<double> h2, logits;
};
Reference reference(const TailModel& md, const HostTail& h, int rows, int seq_len) {
  const int E = md.E, F = md.F, C = md.C;
  auto product = [&](const std::vector<double>& a, const std::vector<__half>& w, int K, int N) {
    std::vector<double> y(size_t(rows) * N, 0.0);
    for (int m = 0; m < rows; ++m)
      for (int k = 0; k < K; ++k) {
        const double av = a[size_t(m) * K + k];
        for (int n = 0; n < N; ++n) y[size_t(m) * N + n] += av * h2f(w[size_t(k) * N + n]);
      }
    return y;
  };
  auto layer_norm = [&](std::vector<double>& v, const std::vector<__half>& g, const std::vector<__half>& b) {
    for (int m = 0; m < rows; ++m) {
      double mean = 0, var = 0;
      for (int c = 0; c < E; ++c) mean += v[size_t(m) * E + c];
      mean /= E;
      for (int c = 0; c < E; ++c) var += (v[size_t(m) * E + c] - mean) * (v[size_t(m) * E + c] - mean);
      var /= E;
      for (int c = 0; c < E; ++c)
        v[size_t(m) * E + c] = rnd((v[size_t(m) * E + c] - mean) / std::sqrt(var + 1e-12) * h2f(g[c]) + h2f(b[c]));
    }
  };
  std::vector<double> a(size_t(rows) * E);
  for (size_t i = 0; i < a.size(); ++i) a[i] = h2f(h.ctx[i]);
  auto y = product(a, h.wo, E, E);
  for (int m = 0; m < rows; ++m)
    for (int c = 0; c < E; ++c)
      y[size_t(m) * E + c] = rnd(y[size_t(m) * E + c] + h2f(h.bo[c]) + h2f(h.seq[size_t(m) * seq_len * E + c]));
  layer_norm(y, h.g1, h.be1);
  const std::vector<double> h1 = y;
  auto f = product(h1, h.w1, E, F);
  for (int m = 0; m < rows; ++m)
    for (int c = 0; c < F; ++c) {
      const double x = f[size_t(m) * F + c] + h2f(h.b1[c]);
      f[size_t(m) * F + c] = rnd(0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
    }
  auto y2 = product(f, h.w2, F, E);
  for (int m = 0; m < rows; ++m)
    for (int c = 0; c < E; ++c) y2[size_t(m) * E + c] = rnd(y2[size_t(m) * E + c] + h2f(h.b2[c]) + h1[size_t(m) * E + c]);
  layer_norm(y2, h.g2, h.be2);
  Reference ref;
  ref.h2 = y2;
  auto z = product(y2, h.wp, E, E);
  std::vector<double> logits(size_t(rows) * C);
  for (int m = 0; m < rows; ++m) {
    for (int c = 0; c < E; ++c) {
      const double v = z[size_t(m) * E + c] + h2f(h.bp[c]);
      z[size_t(m) * E + c] = rnd(md.tanh_head ? std::tanh(v) : std::max(v, 0.0));
    }
    for (int j = 0; j < C; ++j) {
      double t = h2f(h.bc[j]);
      for (int c = 0; c < E; ++c) t += z[size_t(m) * E + c] * h2f(h.wc[size_t(c) * C + j]);
      logits[size_t(m) * C + j] = t;
    }
  }
  ref.logits = std::move(logits);
  return ref;
}

// Splits product d's K so that its tiles fill at most `grid` CTAs: slices of a multiple of 16.
void plan_product(Product& d, int grid) {
  d.nblocks = d.N / kCols;
  int slices = std::max(1, grid / d.nblocks);
  d.kslice = ((d.K + slices - 1) / slices + 15) / 16 * 16;
  d.slices = (d.K + d.kslice - 1) / d.kslice;
}

double max_diff(const std::vector<float>& got, const std::vector<double>& want) {
  double d = 0;
  for (size_t i = 0; i < want.size(); ++i) d = std::max(d, std::fabs(double(got[i]) - want[i]));
  return d;
}

// Median GPU time of `enqueue` (which returns its first error) replayed as a CUDA graph, or
// launched directly when it cannot be captured (`graphed` says which): cooperative launches
// are capturable from CUDA 12 on, and this keeps the numbers coming should a driver refuse.
template <class Enqueue>
float median_ms(cudaStream_t stream, Enqueue enqueue, int iters, void* flush, size_t flush_bytes, bool* graphed) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool use_graph = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (use_graph) {
    const cudaError_t launched = enqueue();
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    use_graph = launched == cudaSuccess && ended == cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (!use_graph) {
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
    }
  }
  *graphed = use_graph;
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < iters + 20; ++i) {
    if (flush) CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream));
    CHECK_CUDA(cudaEventRecord(a, stream));
    if (use_graph) CHECK_CUDA(cudaGraphLaunch(exec, stream));
    else CHECK_CUDA(enqueue());
    CHECK_CUDA(cudaEventRecord(b, stream));
    CHECK_CUDA(cudaEventSynchronize(b));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    if (i >= 20) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  if (use_graph) {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms[ms.size() / 2];
}

void run(const TailModel& md, int rows, bool layer_only, int iters, int sm_count, const CudaHandles& handles, void* ws,
         void* flush, size_t flush_bytes) {
  // The residual rows: row 0 of each of `rows` sequences of 128 (a classifier's token), or with
  // --layer the rows themselves (every token of one sequence at batch 1).
  const int E = md.E, F = md.F, C = md.C, S = layer_only ? 1 : 128;
  const float we = 1.f / std::sqrt(float(E)), wf = 1.f / std::sqrt(float(F));
  HostTail h;
  h.ctx = random_halves(size_t(rows) * E, 1.f, 1);
  h.seq = random_halves(size_t(rows) * S * E, 1.f, 2);
  h.wo = random_halves(size_t(E) * E, we, 3), h.bo = random_halves(E, 0.1f, 4);
  h.g1 = random_halves(E, 1.f, 5), h.be1 = random_halves(E, 0.1f, 6);
  h.w1 = random_halves(size_t(E) * F, we, 7), h.b1 = random_halves(F, 0.1f, 8);
  h.w2 = random_halves(size_t(F) * E, wf, 9), h.b2 = random_halves(E, 0.1f, 10);
  h.g2 = random_halves(E, 1.f, 11), h.be2 = random_halves(E, 0.1f, 12);
  h.wp = random_halves(size_t(E) * E, we, 13), h.bp = random_halves(E, 0.1f, 14);
  h.wc = random_halves(size_t(E) * C, we, 15), h.bc = random_halves(C, 0.1f, 16);
  const Reference want = reference(md, h, rows, S);

  __half *ctx = upload(h.ctx), *seq = upload(h.seq), *wo = upload(h.wo), *bo = upload(h.bo), *g1 = upload(h.g1),
         *be1 = upload(h.be1), *w1 = upload(h.w1), *b1 = upload(h.b1), *w2 = upload(h.w2), *b2 = upload(h.b2),
         *g2 = upload(h.g2), *be2 = upload(h.be2), *wp = upload(h.wp), *bp = upload(h.bp), *wc = upload(h.wc),
         *bc = upload(h.bc);
  auto scratch_half = [&](size_t n) { return upload(std::vector<__half>(n)); };
  __half *h1 = scratch_half(size_t(rows) * E), *h2 = scratch_half(size_t(rows) * E);
  __half *y1 = scratch_half(size_t(rows) * E), *a2 = scratch_half(size_t(rows) * F), *y3 = scratch_half(size_t(rows) * E),
         *pooled = scratch_half(size_t(rows) * E);
  float* logits = upload(std::vector<float>(size_t(rows) * C));

  // ---- the fused kernel
  TailParams p;
  p.rows = rows, p.ctx = ctx, p.ld_ctx = E, p.residual = seq, p.ld_res = int64_t(S) * E;
  const int dims[4][2] = {{E, E}, {E, F}, {F, E}, {E, E}};
  const __half* ws4[4] = {wo, w1, w2, wp};
  int smem = 0;
  for (int q = 0; q < 4; ++q) {
    Product& d = p.p[q];
    d.w = ws4[q], d.K = dims[q][0], d.N = dims[q][1];
    plan_product(d, sm_count);
    d.partial = upload(std::vector<float>(size_t(d.slices) * rows * d.N));
    d.smem = smem;
    smem += d.kslice * kWStride * 2;
  }
  const int mblocks = rows <= 16 ? 1 : rows <= 32 ? 2 : rows <= 64 ? 4 : 8;
  p.a_smem = smem, p.a_stride = kAChunk + 8;
  smem += mblocks * 16 * p.a_stride * 2;
  p.red_smem = smem;
  smem += 4 * mblocks * 2 * 4 * 32 * 4;
  p.bo = bo, p.b1 = b1, p.b2 = b2, p.bp = bp, p.g1 = g1, p.be1 = be1, p.g2 = g2, p.be2 = be2, p.wc = wc, p.bc = bc;
  p.h1 = h1, p.h2 = h2, p.logits = logits, p.classes = C, p.tanh_head = md.tanh_head, p.head = !layer_only;
  auto kernel = mblocks == 1 ? tail_kernel<1> : mblocks == 2 ? tail_kernel<2> : mblocks == 4 ? tail_kernel<4> : tail_kernel<8>;
  CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, size_t(smem)));
  if (per_sm < 1) {
    std::printf("%s rows %d: the fused kernel does not fit an SM (%d bytes of shared memory)\n", md.name, rows, smem);
    return;
  }
  auto fused = [&] { return launch_cooperative(kernel, sm_count, smem, handles.stream, p); };

  // ---- today's kernels (as an ingot engine enqueues them)
  auto kernels = [&] {
    GemmDesc out;
    out.m = rows, out.n = E, out.k = E, out.dtype = DType::kFloat16, out.bias = bo;
    out.beta = 1.f, out.c_in = seq, out.ldc_in = int64_t(S) * E;
    check_status(lt_gemm(handles, out, ctx, wo, y1, ws, kGemmWorkspaceBytes));
    RowNormLaunch ln;
    ln.dtype = ln.param_dtype = DType::kFloat16, ln.x = y1, ln.gamma = g1, ln.beta = be1, ln.y = h1;
    ln.rows = rows, ln.d = E, ln.x_period = rows, ln.epsilon = 1e-12f, ln.sm_count = sm_count;
    CHECK_CUDA(launch_row_norm(ln, handles.stream));
    GemmDesc ffn1;
    ffn1.m = rows, ffn1.n = F, ffn1.k = E, ffn1.dtype = DType::kFloat16, ffn1.bias = b1;
    ffn1.activation = GemmActivation::kGeluTanh;
    check_status(lt_gemm(handles, ffn1, h1, w1, a2, ws, kGemmWorkspaceBytes));
    GemmDesc ffn2;
    ffn2.m = rows, ffn2.n = E, ffn2.k = F, ffn2.dtype = DType::kFloat16, ffn2.bias = b2, ffn2.beta = 1.f, ffn2.c_in = h1;
    check_status(lt_gemm(handles, ffn2, a2, w2, y3, ws, kGemmWorkspaceBytes));
    ln.x = y3, ln.gamma = g2, ln.beta = be2, ln.y = h2;
    CHECK_CUDA(launch_row_norm(ln, handles.stream));
    if (layer_only) return cudaSuccess;
    GemmDesc head;
    head.m = rows, head.n = E, head.k = E, head.dtype = DType::kFloat16, head.bias = bp;
    if (!md.tanh_head) head.activation = GemmActivation::kRelu;
    check_status(lt_gemm(handles, head, h2, wp, pooled, ws, kGemmWorkspaceBytes));
    if (md.tanh_head)  // the pooler's Tanh: an elementwise kernel of its own (cuBLASLt has no tanh epilogue)
      CHECK_CUDA(ew::launch_unary(ew::UnaryOp::kTanh, DType::kFloat16, ew::UnaryParams{}, pooled, pooled, int64_t(rows) * E,
                              handles.stream));
    CHECK_CUDA(launch_skinny_product(pooled, wc, bc, logits, rows, E, C, DType::kFloat16, true, false,
                                     PointwiseActivation::kRelu, handles.stream));
    return cudaSuccess;
  };

  // The logits, or with --layer h2, against the reference.
  auto check = [&] {
    CHECK_CUDA(cudaStreamSynchronize(handles.stream));
    if (layer_only) {
      std::vector<__half> got(size_t(rows) * E);
      CHECK_CUDA(cudaMemcpy(got.data(), h2, got.size() * sizeof(__half), cudaMemcpyDeviceToHost));
      std::vector<float> f(got.size());
      for (size_t i = 0; i < got.size(); ++i) f[i] = h2f(got[i]);
      return max_diff(f, want.h2);
    }
    std::vector<float> got(size_t(rows) * C);
    CHECK_CUDA(cudaMemcpy(got.data(), logits, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return max_diff(got, want.logits);
  };
  CHECK_CUDA(kernels());  // first run outside capture: cuBLASLt picks its algorithms
  const double err_kernels = check();
  CHECK_CUDA(cudaMemset(logits, 0, size_t(rows) * C * sizeof(float)));
  CHECK_CUDA(cudaMemset(h2, 0, size_t(rows) * E * sizeof(__half)));
  CHECK_CUDA(fused());
  const double err_fused = check();
  bool graphed[5];
  const float t_kernels_hot = median_ms(handles.stream, kernels, iters, nullptr, 0, &graphed[0]);
  const float t_fused_hot = median_ms(handles.stream, fused, iters, nullptr, 0, &graphed[1]);
  const float t_kernels_cold = median_ms(handles.stream, kernels, iters, flush, flush_bytes, &graphed[2]);
  const float t_fused_cold = median_ms(handles.stream, fused, iters, flush, flush_bytes, &graphed[3]);
  const double err_fused_graph = check();
  const int barriers = layer_only ? 4 : 6;
  const float t_barriers = median_ms(
      handles.stream, [&] { return launch_cooperative(barriers_kernel, sm_count, 0, handles.stream, barriers); }, iters,
      nullptr, 0, &graphed[4]);
  auto us = [&](float ms, int i) { return std::to_string(ms * 1e3).substr(0, 6) + (graphed[i] ? "" : " (no graph)"); };
  std::printf("| %s | %d | %s | %s | %s | %s | %s | %.1e | %.1e |\n", md.name, rows, us(t_kernels_hot, 0).c_str(),
              us(t_fused_hot, 1).c_str(), us(t_kernels_cold, 2).c_str(), us(t_fused_cold, 3).c_str(),
              us(t_barriers, 4).c_str(), err_kernels, std::max(err_fused, err_fused_graph));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows{1, 32};
  int iters = 500;
  bool layer_only = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--layer") {
      layer_only = true;
      --i;
    } else if (i + 1 >= argc) {
      std::fprintf(stderr, "few_row_tail_bench: %s needs a value\n", a.c_str());
      return 2;
    } else if (a == "--iters") {
      iters = std::atoi(argv[i + 1]);
    } else if (a == "--rows") {
      rows.clear();
      for (const char* s = argv[i + 1]; *s;) {
        rows.push_back(std::atoi(s));
        while (*s && *s != ',') ++s;
        if (*s) ++s;
      }
    } else {
      std::fprintf(stderr, "few_row_tail_bench: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  for (int r : rows)
    if (r < 1 || r > kMaxRows) {
      std::fprintf(stderr, "few_row_tail_bench: --rows takes 1..%d\n", kMaxRows);
      return 2;
    }
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "few_row_tail_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  CudaHandles handles;
  CHECK_CUDA(cudaStreamCreateWithFlags(&handles.stream, cudaStreamNonBlocking));
  if (cublasLtCreate(&handles.lt) != CUBLAS_STATUS_SUCCESS) return 1;
  handles.sm_count = prop.multiProcessorCount;
  void* ws = nullptr;
  CHECK_CUDA(cudaMalloc(&ws, kGemmWorkspaceBytes));
  const size_t flush_bytes = size_t(96) << 20;  // twice an H100's L2
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  std::printf("%s, %d SMs; GPU us per tail (median of %d graph replays)\n\n", prop.name, prop.multiProcessorCount, iters);
  std::printf("%s\n\n", layer_only ? "--layer: out-projection, LayerNorm, FFN, LayerNorm (4 grid barriers); max err on h2"
                                    : "the tail: out-projection to logits (6 grid barriers); max err on the logits");
  std::printf("| model | rows | kernels, hot | fused, hot | kernels, cold | fused, cold | grid barriers alone | kernels max err | fused max err |\n");
  std::printf("| --- | --: | --: | --: | --: | --: | --: | --: | --: |\n");
  TailModel distilbert;
  TailModel bert;
  bert.tanh_head = true, bert.name = "BERT-base";
  for (int r : rows) {
    run(distilbert, r, layer_only, iters, prop.multiProcessorCount, handles, ws, flush, flush_bytes);
    if (!layer_only) run(bert, r, false, iters, prop.multiProcessorCount, handles, ws, flush, flush_bytes);
  }
  return 0;
}
