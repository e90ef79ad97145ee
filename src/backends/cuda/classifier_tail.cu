// ingot.ClassifierHead with its feed-forward block (inputs 7 to 12), and optionally the
// attention's output projection before it (13 to 15), in one launch for at most kHeadMaxRows
// rows: a classifier's last layer after its attention core, at batch 1 or 2. The unfused tail is
// six or seven kernels for one row (the projection, LayerNorm, two products, and the head's),
// each costing about its launch; here the work is spread over up to one CTA per multiprocessor
// and the CTAs meet at two or three grid-wide barriers.
//
//   0. Every CTA asks the copy engine for its weights: a column slice of F1 (NF / CTAs columns)
//      and of W1 (N1 / CTAs) as 2-D tensor copies of up to 256 rows, and the matching row slice
//      of F2 (the rows that multiply its columns of G), which is contiguous: one bulk copy.
//      The weights (10 MB for DistilBERT in float16) are what the kernel waits for. (16-byte
//      cp.async from every thread took 5 µs on an H100 just to issue them; F2 in column slices
//      too, 16 bytes of every row, was slower still.)
//   (With the projection: every CTA computes its K / CTAs columns of X0 = context · Wo + bo + R
//   from a column slice of Wo, asked for first, into scratch.               grid barrier 0)
//   1. Every CTA normalizes the block's input rows for itself (Hf, a few KB), computes its
//      columns of G = act(Hf · F1 + fb1), keeps them, and multiplies them by its rows of F2: a
//      partial sum of the block's output over all K columns, into scratch.   grid barrier 1
//   2. CTA c sums the partial sums of its K / CTAs columns in CTA order (deterministic), adds fb2
//      and the residual Hf: its slice of the block's output X, into scratch.  grid barrier 2
//   3. Every CTA reads all of X, normalizes it with the head's LayerNorm, computes its slice of
//      H = act(Xn · W1 + b1) and that slice's share of each logit; the CTA that finishes last
//      sums the shares in CTA order, adds b2 and writes Y.
//
// On an H200 at DistilBERT's sizes (one row, 128 CTAs) the kernel takes about 14.5 µs alone,
// nearly all of it latency: F1 in at 3.0 µs, then each step that crosses CTAs (a barrier, a read
// of what other CTAs wrote) about 1 µs. It replaces five launches of about 24 µs alone.
//
// The barriers need every CTA resident at once: the grid is at most one CTA per multiprocessor
// and the launch is cooperative, so the driver guarantees it (two contexts' tails on separate
// streams cannot each hold part of the device). In small graphs the launch is also a dependent
// one: F1 and Wo (constants) are asked for before the kernel waits for the one before it. The context's grid counter counts the arrivals
// (CTAs, then 2 · CTAs, then the tickets) and the last CTA sets it back to zero.
// Rounding as the unfused graph's kernels: Hf, G, X, Xn and H are rounded to T; for half types
// the GELU of F1 is its tanh form, as cuBLASLt's epilogue computes it there (gemm.cc). The block's
// output sums its products in another order than cuBLASLt.
#include <algorithm>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/classifier_head_impl.h"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/grid_barrier.cuh"
#include "backends/cuda/mma_sync.cuh"  // smem_addr
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/pointwise_activation.cuh"

namespace ingot::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowVals = 4;  // elements of a K-long row a thread holds: K ≤ kThreads · kRowVals
constexpr size_t kMaxSmem = size_t(200) << 10;  // of the 227 KB a CTA may have, with room for static
constexpr size_t kMaxBulkBytes = (size_t(1) << 20) - 16;  // an mbarrier's transaction count
constexpr int kMaxBoxRows = 256;  // a tensor copy's box

// Rows of a tensor-copy box over K rows, and the rows its boxes cover.
__host__ __device__ constexpr int box_rows(int K) { return K < kMaxBoxRows ? K : kMaxBoxRows; }
__host__ __device__ constexpr int boxed_rows(int K) { return (K + box_rows(K) - 1) / box_rows(K) * box_rows(K); }

struct TailParams {
  const void *x, *ffn_gamma, *ffn_beta, *f1, *fb1, *f2, *fb2;
  const void *gamma, *beta, *w1, *b1, *w2, *b2;
  void* y;
  const void *wo, *bo, *residual;  // the projection (wo null: none); row r's residual at + r · pitch
  int64_t residual_pitch;
  float* shares;      // [kHeadMaxRows · kHeadMaxLogits][ctas]
  float* partials;    // [ctas][rows][K]: each CTA's partial sum of the block's output
  void* xo;           // [rows][K] of T: the block's output
  void* x0;           // [rows][K] of T: the projection's output, the block's input
  unsigned* counter;  // zero on entry, zero again when the last CTA is done
  int K, NF, N1, N2;
  int fpc, kpc, ppc;  // 16-byte column groups a CTA takes of F1 (and rows of F2), of X, of W1
  float ffn_epsilon, epsilon;
  bool float_output, ffn_has_act, has_act;
  PointwiseActivation ffn_act, act;
};

// Rows r < R of x ([R][K] of T in global memory; `fresh`: written by other CTAs of this kernel,
// so read from L2) normalized over K into out [R][K], rounded to T as the LayerNorm kernel
// stores them.
template <class T, int R>
__device__ void normalize_rows(const T* x, bool fresh, int K, const T* gamma, const T* beta, float epsilon, float* out,
                               float* red) {
  const int t = int(threadIdx.x);
  float xv[R][kRowVals], s[R], q[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    s[r] = 0.f;
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = t + i * kThreads;
      float v = 0.f;
      if (k < K) v = to_float(fresh ? __ldcg(x + size_t(r) * K + k) : x[size_t(r) * K + k]);
      xv[r][i] = v;
      s[r] += v;
    }
  }
  norm::block_sums<R, kWarps>(s, red);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    s[r] /= float(K);
    q[r] = 0.f;
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const float c = t + i * kThreads < K ? xv[r][i] - s[r] : 0.f;
      q[r] += c * c;
    }
  }
  norm::block_sums<R, kWarps>(q, red);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float inv = 1.0f / sqrtf(q[r] / float(K) + epsilon);
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = t + i * kThreads;
      if (k >= K) continue;
      const float b = beta ? to_float(beta[k]) : 0.f;
      out[size_t(r) * K + k] = norm::round_to<T>((xv[r][i] - s[r]) * inv * to_float(gamma[k]) + b);
    }
  }
}

// Asks for columns [c0, c0 + cols) of a K-row matrix (its tensor map) into dst [boxed_rows(K)]
// [cols] in boxes of box_rows(K) rows, completing on bar; columns past the matrix read as zero.
__device__ __forceinline__ void copy_columns(uint32_t dst, const CUtensorMap* map, int K, int c0, int cols, int es,
                                             uint32_t bar) {
  const int rows = box_rows(K);
  mbar_expect_tx(bar, uint32_t(boxed_rows(K)) * uint32_t(cols * es));
  for (int k = 0; k < K; k += rows) tensor_copy(dst + uint32_t(k * cols * es), map, c0, k, bar);
}

// out[r · cols + c] = Σ_k x[r · K + k] · w[k · cols + c] for r < R, c < cols = groups · V:
// thread t takes column group t % groups over the k-rows t / groups, t / groups + lanes, ...
// (consecutive threads read consecutive 16 bytes of w); the partial sums meet in red
// [R · cols][lanes] and a warp sums each output.
template <class T, int R>
__device__ void column_product(const float* x, int K, const T* w, int groups, float* red, float* out) {
  constexpr int kVec = int(16 / sizeof(T));
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int cols = groups * kVec, lanes = kThreads / groups, gi = t % groups, kl = t / groups;
  float acc[R][kVec];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[r][i] = 0.f;
  if (kl < lanes) {
#pragma unroll 4
    for (int k = kl; k < K; k += lanes) {
      float wv[kVec];
      load_floats<T, kVec>(w + size_t(k) * cols + gi * kVec, wv);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float xv = x[size_t(r) * K + k];
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[r][i] = fmaf(xv, wv[i], acc[r][i]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < kVec; ++i) red[size_t(r * cols + gi * kVec + i) * lanes + kl] = acc[r][i];
  }
  __syncthreads();
  for (int o = warp; o < R * cols; o += kWarps) {
    float s = 0.f;
    for (int l = lane; l < lanes; l += 32) s += red[size_t(o) * lanes + l];
    s = norm::warp_sum(s);
    if (lane == 0) out[o] = s;
  }
  __syncthreads();
}

// out[o] = act(in[o] + bias[c0 + c]) rounded to T for o = r · cols + c < R · cols, and 0 for the
// columns past n (in may be out: each thread reads and writes only its own o).
template <class T, int R>
__device__ void bias_activation(const float* in, float* out, int cols, int c0, int n, const void* bias, bool has_act,
                                PointwiseActivation act) {
  for (int o = int(threadIdx.x); o < R * cols; o += kThreads) {
    const int c = c0 + o % cols;
    float v = 0.f;
    if (c < n) {
      v = in[o] + (bias ? to_float(static_cast<const T*>(bias)[c]) : 0.f);
      if (has_act) v = activate(v, act);
      v = norm::round_to<T>(v);
    }
    out[o] = v;
  }
}

// The shared memory of one CTA, in bytes from a 128-byte aligned start (tensor copies' boxes
// land on 128-byte boundaries: fits() checks each box's bytes are a multiple of 128).
struct SmemLayout {
  size_t f1 = 0, w1 = 0, f2 = 0, wo = 0, xa = 0, gs = 0, red = 0, out = 0, total = 0;
};

template <class T>
__host__ __device__ SmemLayout smem_layout(int R, int K, int fpc, int kpc, int ppc, bool projection) {
  constexpr int kVec = int(16 / sizeof(T));
  const int c1 = fpc * kVec, most = fpc > ppc ? fpc : ppc;
  auto up = [](size_t n) { return (n + 127) / 128 * 128; };
  SmemLayout l;
  l.wo = l.f1 + up(size_t(boxed_rows(K)) * fpc * 16);
  l.w1 = l.wo + (projection ? up(size_t(boxed_rows(K)) * kpc * 16) : 0);
  l.f2 = l.w1 + up(size_t(boxed_rows(K)) * ppc * 16);
  l.xa = l.f2 + up(size_t(c1) * K * sizeof(T));
  l.gs = l.xa + up(size_t(R) * K * 4);
  l.red = l.gs + up(size_t(R) * c1 * 4);
  const size_t red = size_t(R) * kVec * kThreads * 4, sums = size_t(kThreads) * 4;  // column_product; the X slice's
  l.out = l.red + (red > sums ? red : sums);
  l.total = l.out + up(size_t(R) * (most > kpc ? most : kpc) * kVec * 4) + 128;  // + the start's alignment
  return l;
}

template <class T, int R>
__global__ void __launch_bounds__(kThreads)
    classifier_tail_kernel(const __grid_constant__ CUtensorMap f1map, const __grid_constant__ CUtensorMap w1map,
                           const __grid_constant__ CUtensorMap womap, TailParams p) {
  constexpr int kVec = int(16 / sizeof(T));
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((128u - (smem_addr(smem_raw) & 127u)) & 127u);
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5, cta = int(blockIdx.x), ctas = int(gridDim.x);
  const int K = p.K, NF = p.NF, N1 = p.N1, N2 = p.N2;
  const bool projection = p.wo != nullptr;
  const SmemLayout l = smem_layout<T>(R, K, p.fpc, p.kpc, p.ppc, projection);
  T* sf1 = reinterpret_cast<T*>(smem + l.f1);  // [K][c1]
  T* sw1 = reinterpret_cast<T*>(smem + l.w1);  // [K][c3]
  T* sf2 = reinterpret_cast<T*>(smem + l.f2);  // [c1][K]
  T* swo = reinterpret_cast<T*>(smem + l.wo);  // [K][c2]
  float* xa = reinterpret_cast<float*>(smem + l.xa);  // [R][K]: Hf, later the head's Xn
  float* gs = reinterpret_cast<float*>(smem + l.gs);  // [R][c1]: this CTA's columns of G
  float* red = reinterpret_cast<float*>(smem + l.red);
  float* out = reinterpret_cast<float*>(smem + l.out);
  __shared__ float sums[kWarps * R];
  __shared__ __align__(8) uint64_t bars[4];  // F1, F2, W1, Wo
  __shared__ bool last;
  const int c1 = p.fpc * kVec, c2 = p.kpc * kVec, c3 = p.ppc * kVec;
  const int n0 = cta * c1, d0 = cta * c2, p0 = cta * c3;
  const int f2_rows = max(0, min(c1, NF - n0));

  // 0. F1, a constant, asked for before the wait for the kernel before; F2 and W1 once F1 is in,
  // so that F1 has the memory to itself first (F1 then arrived in 3.0 µs instead of 3.6 on an
  // H200, and the kernel took 14.4 µs instead of 15.1).
  const uint32_t f1_bar = smem_addr(&bars[0]), f2_bar = smem_addr(&bars[1]), w1_bar = smem_addr(&bars[2]),
                 wo_bar = smem_addr(&bars[3]);
  if (t == 0) {
    for (int i = 0; i < 4; ++i) mbar_init(smem_addr(&bars[i]));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    if (projection) copy_columns(smem_addr(swo), &womap, K, d0, c2, int(sizeof(T)), wo_bar);
    copy_columns(smem_addr(sf1), &f1map, K, n0, c1, int(sizeof(T)), f1_bar);
  }
  __syncthreads();  // the barriers are initialized before anyone waits on them
  wait_prior_grids();
  allow_dependent_grids();

  // (With the projection: this CTA's columns of X0 = context · Wo + bo + residual.)
  const T* x0 = static_cast<const T*>(p.x);
  unsigned arrivals = 0;  // barriers passed, times CTAs
  if (projection) {
    for (int i = t; i < R * K; i += kThreads) xa[i] = to_float(static_cast<const T*>(p.x)[i]);
    mbar_wait(wo_bar);
    __syncthreads();
    column_product<T, R>(xa, K, swo, p.kpc, red, out);
    T* x0w = static_cast<T*>(p.x0);
    for (int o = t; o < R * c2; o += kThreads) {
      const int r = o / c2, d = d0 + o % c2;
      if (d >= K) continue;
      const float v = out[o] + (p.bo ? to_float(static_cast<const T*>(p.bo)[d]) : 0.f) +
                      to_float(static_cast<const T*>(p.residual)[size_t(r) * p.residual_pitch + d]);
      x0w[size_t(r) * K + d] = from_float<T>(v);
    }
    grid_barrier(p.counter, arrivals);
    x0 = x0w;
  }

  // 1. Hf; this CTA's columns of G; their product with its rows of F2, a partial sum of X.
  normalize_rows<T, R>(x0, projection, K, static_cast<const T*>(p.ffn_gamma),
                       static_cast<const T*>(p.ffn_beta), p.ffn_epsilon, xa, sums);
  mbar_wait(f1_bar);
  if (t == 0) {
    const uint32_t bytes = uint32_t(f2_rows) * uint32_t(K) * uint32_t(sizeof(T));
    mbar_expect_tx(f2_bar, bytes);
    if (bytes > 0) bulk_copy(smem_addr(sf2), static_cast<const T*>(p.f2) + size_t(n0) * K, bytes, f2_bar);
    copy_columns(smem_addr(sw1), &w1map, K, p0, c3, int(sizeof(T)), w1_bar);
  }
  __syncthreads();  // Hf complete
  column_product<T, R>(xa, K, sf1, p.fpc, red, out);
  bias_activation<T, R>(out, gs, c1, n0, NF, p.fb1, p.ffn_has_act, p.ffn_act);
  __syncthreads();
  mbar_wait(f2_bar);
  for (int v = t; v < K / kVec; v += kThreads) {
    float acc[R][kVec];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < kVec; ++i) acc[r][i] = 0.f;
#pragma unroll 4
    for (int j = 0; j < f2_rows; ++j) {
      float wv[kVec];
      load_floats<T, kVec>(sf2 + size_t(j) * K + v * kVec, wv);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float g = gs[r * c1 + j];
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[r][i] = fmaf(g, wv[i], acc[r][i]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float* dst = p.partials + (size_t(cta) * R + r) * K + v * kVec;
#pragma unroll
      for (int i = 0; i < kVec; i += 4) *reinterpret_cast<float4*>(dst + i) = make_float4(acc[r][i], acc[r][i + 1], acc[r][i + 2], acc[r][i + 3]);
    }
  }
  grid_barrier(p.counter, arrivals);

  // 2. This CTA's columns of X: the partial sums in CTA order, fb2, the residual Hf.
  T* xo = static_cast<T*>(p.xo);
  {
    // Thread t sums sources t / O, t / O + lanes, ... for output t % O; O divides 32 (fits()),
    // so a warp's lanes of one output meet by shuffles, then the warps in order.
    const int O = R * c2, lanes = kThreads / O, o = t % O, sl = t / O;
    const int r = o / c2, d = d0 + o % c2;
    float s = 0.f;
    if (d < K) {
#pragma unroll 4
      for (int src = sl; src < ctas; src += lanes) s += __ldcg(p.partials + (size_t(src) * R + r) * K + d);
    }
    for (int off = O; off < 32; off <<= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane < O) red[warp * O + lane] = s;
    __syncthreads();
    if (t < O && d < K) {
      float v = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) v += red[w * O + t];
      v += (p.fb2 ? to_float(static_cast<const T*>(p.fb2)[d]) : 0.f) + xa[size_t(r) * K + d];
      xo[size_t(r) * K + d] = from_float<T>(v);
    }
  }
  grid_barrier(p.counter, arrivals);

  // 3. The head: Xn, this CTA's slice of H (into `out`), its share of each logit.
  normalize_rows<T, R>(xo, true, K, static_cast<const T*>(p.gamma), static_cast<const T*>(p.beta), p.epsilon, xa, sums);
  mbar_wait(w1_bar);
  __syncthreads();  // Xn complete
  column_product<T, R>(xa, K, sw1, p.ppc, red, out);
  bias_activation<T, R>(out, out, c3, p0, N1, p.b1, p.has_act, p.act);
  __syncthreads();
  const int width = max(0, min(c3, N1 - p0));
  const T* w2 = static_cast<const T*>(p.w2);
  for (int pr = warp; pr < R * N2; pr += kWarps) {
    const int r = pr / N2, n = pr % N2;
    float s = 0.f;
    for (int c = lane; c < width; c += 32) s += out[r * c3 + c] * to_float(w2[size_t(p0 + c) * N2 + n]);
    s = norm::warp_sum(s);
    if (lane == 0) p.shares[size_t(pr) * ctas + cta] = s;
  }
  __syncthreads();
  if (t == 0) {
    __threadfence();  // the CTA's shares are visible before its ticket
    last = atomicAdd(p.counter, 1u) == arrivals + gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  for (int pr = warp; pr < R * N2; pr += kWarps) {
    float s = 0.f;
    for (int b = lane; b < ctas; b += 32) s += __ldcg(&p.shares[size_t(pr) * ctas + b]);
    s = norm::warp_sum(s);
    if (lane == 0) {
      const float v = s + (p.b2 ? to_float(static_cast<const T*>(p.b2)[pr % N2]) : 0.f);
      if (p.float_output) static_cast<float*>(p.y)[pr] = v;
      else static_cast<T*>(p.y)[pr] = from_float<T>(v);
    }
  }
  if (t == 0) *p.counter = 0u;
}

// Column groups a CTA takes of F1 (and rows of F2), of X and of W1, and the CTAs: each spread
// over at most sm_count CTAs (DistilBERT in float16 on 132 SMs: F1's 384 groups 3 a CTA over
// 128 CTAs, X's and W1's 96 one a CTA).
struct Grid {
  int fpc = 0, kpc = 0, ppc = 0, ctas = 0;
};

template <class T>
Grid grid_for(int64_t K, int64_t NF, int64_t N1, int sm_count) {
  constexpr int64_t kVec = 16 / sizeof(T);
  const int64_t target = std::max(sm_count, 1);
  auto per_cta = [&](int64_t cols) { return std::max<int64_t>(1, (cols / kVec + target - 1) / target); };
  auto ctas = [&](int64_t cols, int64_t per) { return (cols / kVec + per - 1) / per; };
  Grid g;
  g.fpc = int(per_cta(NF)), g.kpc = int(per_cta(K)), g.ppc = int(per_cta(N1));
  g.ctas = int(std::max({ctas(NF, g.fpc), ctas(K, g.kpc), ctas(N1, g.ppc)}));
  return g;
}

// Byte offsets in the scratch: the shares of the logits and the partial sums (for at most
// sm_count CTAs), the block's output.
struct ScratchLayout {
  size_t partials = 0, xo = 0, x0 = 0, total = 0;
  ScratchLayout(size_t es, int64_t K, int sm_count) {
    auto up = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t ctas = size_t(std::max(sm_count, 1));
    partials = up(size_t(kHeadMaxRows * kHeadMaxLogits) * ctas * sizeof(float));
    xo = partials + up(ctas * size_t(kHeadMaxRows) * size_t(K) * sizeof(float));
    x0 = xo + up(size_t(kHeadMaxRows) * size_t(K) * es);
    total = x0 + up(size_t(kHeadMaxRows) * size_t(K) * es);
  }
};

template <class T, int R>
cudaError_t launch(const TailLaunch& a, cudaStream_t stream) {
  const HeadLaunch& h = a.head;
  const Grid g = grid_for<T>(h.K, a.NF, h.N1, h.sm_count);
  const bool projection = a.wo != nullptr;
  const size_t smem = smem_layout<T>(R, int(h.K), g.fpc, g.kpc, g.ppc, projection).total;
  static const cudaError_t raised =
      cudaFuncSetAttribute(classifier_tail_kernel<T, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSmem));
  if (raised != cudaSuccess) return raised;
  std::byte* scratch = static_cast<std::byte*>(a.scratch);
  const ScratchLayout s(sizeof(T), h.K, h.sm_count);
  TailParams p{};
  p.x = h.x, p.ffn_gamma = a.ffn_gamma, p.ffn_beta = a.ffn_beta, p.f1 = a.f1, p.fb1 = a.fb1, p.f2 = a.f2, p.fb2 = a.fb2;
  p.gamma = h.gamma, p.beta = h.beta, p.w1 = h.w1, p.b1 = h.b1, p.w2 = h.w2, p.b2 = h.b2, p.y = h.y;
  p.wo = a.wo, p.bo = a.bo, p.residual = a.residual, p.residual_pitch = a.residual_pitch;
  p.shares = reinterpret_cast<float*>(scratch), p.partials = reinterpret_cast<float*>(scratch + s.partials);
  p.xo = scratch + s.xo, p.x0 = scratch + s.x0, p.counter = h.counter;
  p.K = int(h.K), p.NF = int(a.NF), p.N1 = int(h.N1), p.N2 = int(h.N2), p.fpc = g.fpc, p.kpc = g.kpc, p.ppc = g.ppc;
  p.ffn_epsilon = a.ffn_epsilon, p.epsilon = h.epsilon;
  p.float_output = h.float_output, p.ffn_has_act = a.ffn_has_act, p.has_act = h.has_act;
  p.ffn_act = a.ffn_act, p.act = h.act;
  constexpr int kVec = int(16 / sizeof(T));
  const int box = box_rows(int(h.K));
  CUtensorMap f1map{}, w1map{}, womap{};
  if (!encode_tensor_map(&f1map, h.dtype, a.f1, h.K, a.NF, a.NF, box, g.fpc * kVec, false) ||
      !encode_tensor_map(&w1map, h.dtype, h.w1, h.K, h.N1, h.N1, box, g.ppc * kVec, false) ||
      (projection && !encode_tensor_map(&womap, h.dtype, a.wo, h.K, h.K, h.K, box, g.kpc * kVec, false)))
    return cudaErrorInvalidValue;
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  attrs[n].id = cudaLaunchAttributeCooperative;
  attrs[n++].val.cooperative = 1;
  // Dependent launch too (cuda_dependent_launch.h): the CTAs that find room start while the
  // attention core before them runs and have their F1 and Wo slices in flight when it ends (H100,
  // developer session 26, A/B, without / with: DistilBERT b1 0.1836 / 0.1817, 0.1831 / 0.1829,
  // 0.1823 / 0.1821 ms; BERT-base b1 0.3631 / 0.3626, 0.3632 / 0.3624, 0.3635 / 0.3602). Every
  // CTA still becomes resident before any passes the first grid barrier: the ones waiting for
  // room get it when the kernel before ends, and the kernel's wait comes before that barrier.
  if (dependent_launch_enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(g.ctas));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, classifier_tail_kernel<T, R>, f1map, w1map, womap, p);
}

static_assert(kHeadMaxRows == 2, "the kernel is instantiated for one and two rows");

}  // namespace

bool classifier_tail_fits(DType dtype, int64_t rows, int64_t K, int64_t NF, int64_t N1, int64_t N2, int sm_count,
                          bool projection) {
  if (rows < 1 || rows > kHeadMaxRows || N2 < 1 || N2 > kHeadMaxLogits || K < 1 || NF < 1 || N1 < 1 ||
      K > kThreads * kRowVals || sm_count < 1)
    return false;
  bool fits = false;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr int64_t kVec = 16 / sizeof(T);
    if (K % kVec != 0 || NF % kVec != 0 || N1 % kVec != 0) return;
    const Grid g = grid_for<T>(K, NF, N1, sm_count);
    const int R = rows <= 1 ? 1 : 2;
    const int box = box_rows(int(K)), o = R * g.kpc * int(kVec);
    fits = g.ctas <= sm_count && std::max(g.fpc, g.ppc) * kVec <= kMaxBoxRows && (o & (o - 1)) == 0 && o <= 32 &&
           (box * g.fpc * 16) % 128 == 0 && (box * g.ppc * 16) % 128 == 0 && (box * g.kpc * 16) % 128 == 0 &&
           size_t(boxed_rows(int(K))) * size_t(std::max(g.fpc, g.ppc)) * 16 <= kMaxBulkBytes &&
           size_t(g.fpc * kVec) * size_t(K) * sizeof(T) <= kMaxBulkBytes &&
           smem_layout<T>(R, int(K), g.fpc, g.kpc, g.ppc, projection).total <= kMaxSmem;
  });
  return fits;
}

size_t classifier_tail_scratch_bytes(DType dtype, int64_t K, int sm_count) {
  return ScratchLayout(dtype_size(dtype), K, sm_count).total;
}

cudaError_t launch_classifier_tail(const TailLaunch& a, cudaStream_t stream) {
  const HeadLaunch& h = a.head;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (!classifier_tail_fits(h.dtype, h.rows, h.K, a.NF, h.N1, h.N2, h.sm_count, a.wo != nullptr) || !aligned(a.f1) ||
      !aligned(a.f2) || !aligned(h.w1) || (a.wo && (!aligned(a.wo) || !a.residual)) || !a.scratch || !h.counter)
    return cudaErrorInvalidValue;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(h.dtype, [&](auto tag) {
    using T = decltype(tag);
    e = h.rows <= 1 ? launch<T, 1>(a, stream) : launch<T, 2>(a, stream);
  });
  return e;
}

}  // namespace ingot::cuda
