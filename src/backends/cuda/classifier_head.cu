// ingot.ClassifierHead in one launch for at most kHeadMaxRows rows (a batch of a few sequences'
// classifier tokens). W1's columns are spread over about one CTA per multiprocessor (DistilBERT's
// 768 columns in float16: 96 CTAs of 8 columns). At batch 1 the kernel takes 6 µs in a CUDA
// graph on an H200 against about 8.5 for the three kernels it replaces. What it costs is almost
// all latency, not bandwidth: W1 is 1.2 MB; one cluster of 16 CTAs sharing the logits through
// distributed shared memory was slower (14 µs), and a copy of W1 packed so that each CTA's slice
// is contiguous (in place it is 16 bytes of every 1536-byte row) saved 0.3 µs.
//
//   1. Every thread issues its loads of W1 (16 bytes each), of its elements of X's rows, gamma
//      and beta, and of the slice's b1 and rows of W2 and b2, all straight into registers: no
//      load depends on another.
//   2. The CTA normalizes all rows at once (block-wide sums; a warp per row over shared memory,
//      a chain of dependent loads, took 1.7 µs of the kernel on an H100, and copying everything
//      through shared memory first another 3); every CTA does this for itself, the rows are a
//      few KB.
//   3. Each thread multiplies its 16-byte column group of W1 over its share of K (threads
//      t, t + G, ... take the k-rows kl, kl + KL, ...); the partial sums meet in shared memory,
//      then bias, activation and rounding to T give the CTA's slice of H.
//   4. Each warp takes (row, logit) pairs: the slice's share of that logit, into scratch.
//   5. The CTA that finishes last (a ticket from the context's grid counter) sums the shares of
//      each logit in CTA order (deterministic), adds b2, writes Y and sets the counter back to
//      zero for the next kernel of the stream.
#include <algorithm>

#include "backends/cuda/classifier_head_impl.h"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/pointwise_activation.cuh"

namespace ingot::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kLoads = 12;  // 16-byte W1 loads a thread keeps in flight
constexpr int kRowVals = 4;  // elements of each row of X a thread holds: K ≤ kThreads · kRowVals
constexpr int kW2Vals = 2;   // elements of the slice's rows of W2 a thread loads
constexpr int kOut = 4;      // columns of H a warp sums at once
constexpr size_t kMaxSmem = size_t(48) << 10;  // the default limit: no function attribute needed

struct HeadParams {
  const void* x;
  const void* gamma;
  const void* beta;
  const void* w1;
  const void* b1;
  const void* w2;
  const void* b2;
  void* y;
  float* shares;       // [R · kHeadMaxLogits][ctas]
  unsigned* counter;   // zero on entry, zero again when the last CTA is done
  int rows, K, N1, N2, groups_per_cta;
  float epsilon;
  bool float_output, has_act;
  PointwiseActivation act;
};

// Floats between normalized rows: a multiple of 4 (16-byte aligned rows).
__host__ __device__ constexpr int xn_pitch(int K) { return (K + 3) / 4 * 4; }

// The grid for W1's N1 / kVec column groups: groups per CTA so that the CTAs about fill the
// device once (the last CTA's columns may pass N1), and the shared floats a CTA needs.
struct Layout {
  int groups_per_cta = 0, ctas = 0, cols_per_cta = 0;
  size_t floats(int R, int K) const {
    return size_t(R) * xn_pitch(K) + 2 * kWarps * R       // normalized rows, LayerNorm sums
           + size_t(kThreads) * R * cols_per_cta / groups_per_cta  // partial sums [R·cpc][lanes]
           + size_t(R) * cols_per_cta                            // H
           + size_t(cols_per_cta) * (1 + kHeadMaxLogits)         // b1, W2 rows
           + kHeadMaxLogits;                                      // b2
  }
};

template <class T>
Layout layout_for(int64_t N1, int sm_count) {
  constexpr int kVec = int(16 / sizeof(T));
  Layout l;
  const int64_t groups = N1 / kVec;
  const int64_t target = std::max(sm_count, 1);
  l.groups_per_cta = int(std::max<int64_t>(1, (groups + target - 1) / target));
  l.ctas = int((groups + l.groups_per_cta - 1) / l.groups_per_cta);
  l.cols_per_cta = l.groups_per_cta * kVec;
  return l;
}

template <class T, int R>
__global__ void __launch_bounds__(kThreads) classifier_head_kernel(HeadParams p) {
  constexpr int kVec = int(16 / sizeof(T));
  extern __shared__ float smem[];
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int K = p.K, N1 = p.N1, N2 = p.N2, gpc = p.groups_per_cta, cpc = gpc * kVec, lanes = kThreads / gpc;
  const int g = t % gpc, kl = t / gpc;
  const int col0 = int(blockIdx.x) * cpc, col = col0 + g * kVec;
  const bool loads = kl < lanes && col < N1;

  const int pitch = xn_pitch(K);
  float* xn = smem;                          // [R][pitch]
  float* ln_red = xn + size_t(R) * pitch;    // [2][kWarps][R]: the LayerNorm's warp sums
  float* red = ln_red + 2 * kWarps * R;      // [R·cpc][lanes]
  float* h = red + size_t(R) * cpc * lanes;  // [R][cpc]
  float* b1 = h + size_t(R) * cpc;           // [cpc]: the slice's bias
  float* w2 = b1 + cpc;                      // [cpc][N2]: the slice's rows of W2
  float* b2 = w2 + cpc * kHeadMaxLogits;     // [N2]

  // 1. W1 into registers.
  const T* w1g = static_cast<const T*>(p.w1) + col;
  uint4 w[kLoads];
  auto load_w = [&](int k0) {
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int k = k0 + kl + j * lanes;
      w[j] = loads && k < K ? __ldg(reinterpret_cast<const uint4*>(w1g + size_t(k) * N1)) : make_uint4(0, 0, 0, 0);
    }
  };
  load_w(0);
  // The rest into registers, every load independent of the others (one trip to memory): thread
  // t holds elements t, t + 256, ... of each row of X, of gamma and of beta; element t of the
  // slice's b1, of its rows of W2 and of b2. Past the ends (and rows past p.rows): zero. The
  // parameters load before the wait for the kernel before (cuda_dependent_launch.h), X after.
  float xv[R][kRowVals], gv[kRowVals], bv[kRowVals];
  {
    const T* gg = static_cast<const T*>(p.gamma);
    const T* bg = static_cast<const T*>(p.beta);
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = t + i * kThreads;
      gv[i] = k < K ? to_float(gg[k]) : 0.f;
      bv[i] = k < K && bg ? to_float(bg[k]) : 0.f;
    }
  }
  float b1v = 0.f, b2v = 0.f, w2v[kW2Vals];
  {
    const T* b1g = static_cast<const T*>(p.b1);
    const T* w2g = static_cast<const T*>(p.w2);
    const T* b2g = static_cast<const T*>(p.b2);
    if (t < cpc && b1g && col0 + t < N1) b1v = to_float(b1g[col0 + t]);
    if (t < N2 && b2g) b2v = to_float(b2g[t]);
#pragma unroll
    for (int j = 0; j < kW2Vals; ++j) {
      const int i = t + j * kThreads;
      w2v[j] = i < cpc * N2 && col0 + i / N2 < N1 ? to_float(w2g[size_t(col0) * N2 + i]) : 0.f;
    }
  }
  wait_prior_grids();
  allow_dependent_grids();
  {
    const T* x = static_cast<const T*>(p.x);
#pragma unroll
    for (int i = 0; i < kRowVals; ++i) {
      const int k = t + i * kThreads;
#pragma unroll
      for (int r = 0; r < R; ++r) xv[r][i] = k < K && r < p.rows ? to_float(x[size_t(r) * K + k]) : 0.f;
    }
  }
  if (t < cpc) b1[t] = b1v;
  if (t < N2) b2[t] = b2v;
#pragma unroll
  for (int j = 0; j < kW2Vals; ++j)
    if (t + j * kThreads < cpc * N2) w2[t + j * kThreads] = w2v[j];

  // 2. LayerNorm of every row at once, from the registers (two block-wide sums per row: the mean,
  // then the centered variance), into shared memory rounded through T as the LayerNorm kernel
  // stores it.
  {
    float s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = 0.f;
#pragma unroll
      for (int i = 0; i < kRowVals; ++i) s[r] += xv[r][i];
    }
    norm::block_sums<R, kWarps>(s, ln_red);
    float mean[R], q[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      mean[r] = s[r] / float(K);
      q[r] = 0.f;
#pragma unroll
      for (int i = 0; i < kRowVals; ++i) {
        const float c = t + i * kThreads < K ? xv[r][i] - mean[r] : 0.f;
        q[r] += c * c;
      }
    }
    norm::block_sums<R, kWarps>(q, ln_red + kWarps * R);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float inv = 1.0f / sqrtf(q[r] / float(K) + p.epsilon);
#pragma unroll
      for (int i = 0; i < kRowVals; ++i) {
        const int k = t + i * kThreads;
        if (k < K) xn[r * pitch + k] = norm::round_to<T>((xv[r][i] - mean[r]) * inv * gv[i] + bv[i]);
      }
    }
  }
  __syncthreads();

  // 3. The slice of H: products over k-lanes, their sum (a warp per column), bias, activation.
  float acc[R][kVec];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[r][i] = 0.f;
  for (int k0 = 0; k0 < K; k0 += kLoads * lanes) {
    if (k0 > 0) load_w(k0);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int k = k0 + kl + j * lanes;
      if (!loads || k >= K) continue;
      union {
        uint4 u;
        Pack<T, kVec> v;
      } pk;
      pk.u = w[j];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float xv = xn[size_t(r) * pitch + k];
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[r][i] = fmaf(xv, to_float(pk.v.v[i]), acc[r][i]);
      }
    }
  }
  if (kl < lanes) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        if (r < p.rows) red[size_t(r * cpc + g * kVec + i) * lanes + kl] = acc[r][i];
  }
  __syncthreads();
  // kOut columns a warp at a time, each lane's loads unrolled: a loop of one column at a time is
  // a chain of dependent shared-memory loads (1.8 µs of the kernel at 8 rows).
  const int outputs = p.rows * cpc;
  for (int o0 = warp; o0 < outputs; o0 += kWarps * kOut) {
    float sum[kOut];
#pragma unroll
    for (int u = 0; u < kOut; ++u) {
      const int o = o0 + u * kWarps;
      sum[u] = 0.f;
      if (o < outputs) {
#pragma unroll 8
        for (int l = lane; l < lanes; l += 32) sum[u] += red[size_t(o) * lanes + l];
      }
    }
#pragma unroll
    for (int u = 0; u < kOut; ++u) sum[u] = norm::warp_sum(sum[u]);
    if (lane == 0) {
#pragma unroll
      for (int u = 0; u < kOut; ++u) {
        const int o = o0 + u * kWarps, c = o % cpc;
        if (o >= outputs) break;
        float v = 0.f;
        if (col0 + c < N1) {
          v = sum[u] + b1[c];
          if (p.has_act) v = activate(v, p.act);
          v = norm::round_to<T>(v);
        }
        h[o] = v;
      }
    }
  }
  __syncthreads();

  // 4. This slice's share of each logit.
  const int width = min(cpc, N1 - col0);
  for (int pr = warp; pr < p.rows * N2; pr += kWarps) {
    const int r = pr / N2, n = pr % N2;
    float s = 0.f;
    for (int c = lane; c < width; c += 32) s += h[r * cpc + c] * w2[c * N2 + n];
    s = norm::warp_sum(s);
    if (lane == 0) {
      p.shares[size_t(pr) * gridDim.x + blockIdx.x] = s;
      __threadfence();  // the share is visible before the CTA takes its ticket
    }
  }

  // 5. The last CTA to finish sums the shares (read from L2: they were written by other SMs).
  __syncthreads();
  __shared__ bool last;
  if (t == 0) last = atomicAdd(p.counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  for (int pr = warp; pr < p.rows * N2; pr += kWarps) {
    float s = 0.f;
    for (int b = lane; b < int(gridDim.x); b += 32) s += __ldcg(&p.shares[size_t(pr) * gridDim.x + b]);
    s = norm::warp_sum(s);
    if (lane == 0) {
      const float v = s + b2[pr % N2];
      if (p.float_output) static_cast<float*>(p.y)[pr] = v;
      else static_cast<T*>(p.y)[pr] = from_float<T>(v);
    }
  }
  if (t == 0) *p.counter = 0u;
}

template <class T, int R>
cudaError_t launch(const HeadLaunch& a, cudaStream_t stream) {
  const Layout l = layout_for<T>(a.N1, a.sm_count);
  HeadParams p{a.x, a.gamma, a.beta, a.w1, a.b1, a.w2, a.b2, a.y, a.shares, a.counter, int(a.rows), int(a.K),
               int(a.N1), int(a.N2), l.groups_per_cta, a.epsilon, a.float_output, a.has_act, a.act};
  return launch_dependent(classifier_head_kernel<T, R>, unsigned(l.ctas), kThreads,
                          l.floats(R, int(a.K)) * sizeof(float), stream, p);
}

static_assert(kHeadMaxRows == 2, "launch_rows instantiates the kernel for one and two rows");

template <class T>
cudaError_t launch_rows(const HeadLaunch& a, cudaStream_t stream) {
  return a.rows <= 1 ? launch<T, 1>(a, stream) : launch<T, 2>(a, stream);
}

int row_block(int64_t rows) { return rows <= 1 ? 1 : 2; }

}  // namespace

size_t classifier_head_shares_bytes(int64_t N1, int sm_count) {
  // The most CTAs any dtype's layout launches: float32's 4-column groups.
  const Layout l = layout_for<float>(N1, sm_count);
  return size_t(kHeadMaxRows * kHeadMaxLogits) * size_t(l.ctas) * sizeof(float);
}

bool classifier_head_fits(DType dtype, int64_t rows, int64_t K, int64_t N1, int64_t N2, int sm_count) {
  if (rows < 1 || rows > kHeadMaxRows || N2 < 1 || N2 > kHeadMaxLogits || K < 1 || N1 < 1) return false;
  bool fits = false;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr int64_t kVec = 16 / sizeof(T);
    if (N1 % kVec != 0) return;
    const Layout l = layout_for<T>(N1, sm_count);
    fits = K <= kThreads * kRowVals && l.cols_per_cta <= kThreads && l.cols_per_cta * N2 <= kThreads * kW2Vals &&
           l.floats(row_block(rows), int(K)) * sizeof(float) <= kMaxSmem;
  });
  return fits;
}

cudaError_t launch_classifier_head(const HeadLaunch& a, cudaStream_t stream) {
  if (!classifier_head_fits(a.dtype, a.rows, a.K, a.N1, a.N2, a.sm_count) ||
      reinterpret_cast<uintptr_t>(a.w1) % 16 != 0 || !a.shares || !a.counter)
    return cudaErrorInvalidValue;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(a.dtype, [&](auto tag) { e = launch_rows<decltype(tag)>(a, stream); });
  return e;
}

}  // namespace ingot::cuda
