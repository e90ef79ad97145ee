// Row normalisation for LayerNormalization and ingot.SkipLayerNorm: one pass over memory.
//
// Rows of up to 16384 elements (8192 when loaded element by element) are held in registers: a
// row is read once (x, skip, bias summed on the way in), its mean and then its centered
// variance are reduced from the registers (two passes for accuracy: inputs with |mean| >> std
// lose nothing to cancellation), and the output (and the sum) are written once. Rows of up to
// 128 vectors (1024 halves, 512 floats) take one warp each: shuffle reductions, no shared
// memory, no barriers. gamma/beta are read where they are used (they stay in L1): holding them
// in registers for every row a warp visits cost occupancy, and BERT-base's 4096 x 768
// skip-LayerNorm ran ~2 us slower for it (H100, 1.84 -> 1.79 ms for the model at batch 32).
// Longer rows take one block each. Rows longer than that re-read the input from memory
// for each of the three sweeps.
//
// Loads and stores are 16 bytes (8 halves / 4 floats) when the row length and every pointer
// allow it; otherwise element by element.
#include <algorithm>
#include <type_traits>

#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/l2_prefetch.cuh"
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/norm_impl.h"

namespace ingot::cuda {
namespace {

using namespace norm;

__device__ __forceinline__ void store_stat(void* p, DType dt, int64_t i, float v) {
  if (!p) return;
  switch (dt) {
    case DType::kFloat16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case DType::kBFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

// Elements [k, k + V) of row s: x, or (x + bias) + skip for SkipLayerNorm. xo/so: row offsets.
template <class T, class P, int V, bool kSkip>
__device__ __forceinline__ void load_input(const RowNormLaunch& a, int64_t xo, int64_t so, int64_t k,
                                           float (&v)[V]) {
  load_floats<T, V>(static_cast<const T*>(a.x) + xo + k, v);
  if constexpr (kSkip) {
    if (a.bias) {
      float b[V];
      load_floats<P, V>(static_cast<const P*>(a.bias) + k, b);
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = round_to<T>(v[j] + b[j]);
    }
    float s[V];
    load_floats<T, V>(static_cast<const T*>(a.skip) + so + k, s);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = round_to<T>(v[j] + s[j]);
  }
}

// The vectors c = t, t + tpr, ... (c < nv) of a row held in registers, as load_input makes them.
// Every load of the row is issued before the first add: with load_input a vector at a time, the
// loads of vector i + 1 issued behind the adds of vector i, which wait for memory: one trip to
// memory a vector (three at hidden 768).
template <class T, class P, int V, int N, bool kSkip>
__device__ __forceinline__ void load_row(const RowNormLaunch& a, int64_t xo, int64_t so, int t, int tpr, int nv,
                                         float (&v)[N][V]) {
  float b[kSkip ? N : 1][V], r[kSkip ? N : 1][V];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int64_t k = int64_t(i * tpr + t) * V;
    if (i * tpr + t >= nv) continue;
    load_floats<T, V>(static_cast<const T*>(a.x) + xo + k, v[i]);
    if constexpr (kSkip) {
      if (a.bias) load_floats<P, V>(static_cast<const P*>(a.bias) + k, b[i]);
      load_floats<T, V>(static_cast<const T*>(a.skip) + so + k, r[i]);
    }
  }
  if constexpr (kSkip) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (i * tpr + t >= nv) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (a.bias) v[i][j] = round_to<T>(v[i][j] + b[i][j]);
        v[i][j] = round_to<T>(v[i][j] + r[i][j]);
      }
    }
  }
}

// The same with partial products: their sum + bias + skip, rounded once.
template <class T, class P, int V, int N>
__device__ __forceinline__ void load_partial_row(const RowNormLaunch& a, int64_t o, int t, int tpr, int nv,
                                                 float (&v)[N][V]) {
  const int64_t part = a.rows * a.d;
  float p[N][kMaxRowNormParts][V], b[N][V], r[N][V];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int64_t k = int64_t(i * tpr + t) * V;
    if (i * tpr + t >= nv) continue;
#pragma unroll
    for (int s = 0; s < kMaxRowNormParts; ++s)
      if (s < a.parts) load_floats<float, V>(a.partials + s * part + o + k, p[i][s]);
    if (a.bias) load_floats<P, V>(static_cast<const P*>(a.bias) + k, b[i]);
    if (a.skip) load_floats<T, V>(static_cast<const T*>(a.skip) + o + k, r[i]);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (i * tpr + t >= nv) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float x = p[i][0][j];
#pragma unroll
      for (int s = 1; s < kMaxRowNormParts; ++s)
        if (s < a.parts) x += p[i][s][j];
      if (a.bias) x += b[i][j];
      if (a.skip) x += r[i][j];
      v[i][j] = round_to<T>(x);
    }
  }
}

// y = (v - mean) * inv * gamma + beta for one vector, stored with the sum when requested.
template <class T, class P, int V>
__device__ __forceinline__ void store_output(const RowNormLaunch& a, int64_t yo, int64_t k, const float (&v)[V],
                                             const float (&g)[V], const float (&b)[V], float mean, float inv) {
  float y[V];
#pragma unroll
  for (int j = 0; j < V; ++j) y[j] = (v[j] - mean) * inv * g[j] + b[j];
  store_floats<T, V>(static_cast<T*>(a.y) + yo + k, y);
  if (a.sum) store_floats<T, V>(static_cast<T*>(a.sum) + yo + k, v);
}

template <class P, int V>
__device__ __forceinline__ void load_params(const RowNormLaunch& a, int64_t k, float (&g)[V], float (&b)[V]) {
  load_floats<P, V>(static_cast<const P*>(a.gamma) + k, g);
  if (a.beta) {
    load_floats<P, V>(static_cast<const P*>(a.beta) + k, b);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) b[j] = 0.0f;
  }
}

// Rows held in registers: thread t of a row owns vectors t, t + tpr, ..., t + (N-1)·tpr.
// kWarp: one warp per row (blockDim.x / 32 rows per block); else one block per row.
// kParamsFirst: gamma/beta are loaded once, before the row (and before the wait for the kernel
// before when they are constants), so their memory latency does not follow the reductions: for
// launches of few rows, which are latency-bound (batch 1: 128 rows of 768 in 4.5 us, ~0.6 MB);
// with many rows the registers they hold cost occupancy (see the top of the file). Before the
// wait rather than with the row (H100, developer session 26, alternating A/B, GPU compute median
// of 300 runs, ms, before / with): DistilBERT b1 0.1724 / 0.1755, 0.1736 / 0.1752, 0.1727 /
// 0.1760, 0.1716 / 0.1759; BERT-base b1 0.3387 / 0.3452, 0.3395 / 0.3475, 0.3390 / 0.3479,
// 0.3388 / 0.3478: the loads of the row are the only ones left after the product it waits for.
template <class T, class P, int V, int N, bool kSkip, bool kWarp, bool kParamsFirst = false, bool kPartials = false>
__global__ void __launch_bounds__(kWarp ? kWarpModeThreads : kMaxBlockThreads) row_norm_cached(const RowNormLaunch a) {
  const int tpr = kWarp ? 32 : int(blockDim.x);
  const int t = kWarp ? int(threadIdx.x & 31) : int(threadIdx.x);
  const int nv = int(a.d / V);
  // kParamsFirst: gamma/beta (the same for every row) once, before the wait for the kernel before
  // when they are constants of the plan.
  float g[kParamsFirst ? N : 1][V], b[kParamsFirst ? N : 1][V];
  auto load_row_params = [&] {
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (i * tpr + t < nv) load_params<P, V>(a, int64_t(i * tpr + t) * V, g[i], b[i]);
  };
  if constexpr (kParamsFirst)
    if (a.params_constant) load_row_params();
  wait_prior_grids();
  allow_dependent_grids();
  issue_l2_prefetch(a.prefetch);
  if constexpr (kParamsFirst)
    if (!a.params_constant) load_row_params();
  const int rows_per_block = kWarp ? int(blockDim.x >> 5) : 1;
  const int64_t first = int64_t(blockIdx.x) * rows_per_block + (kWarp ? int(threadIdx.x >> 5) : 0);
  const int64_t step = int64_t(gridDim.x) * rows_per_block;
  const float d = float(a.d);

  for (int64_t r = first; r < a.rows; r += step) {
    // A 64-bit remainder is a long dependent chain before the first load (H100, 128 rows of
    // 768 halves: 2.57 against 2.47 us a launch in a graph): only for rows that repeat.
    const int64_t xo = (a.x_period == a.rows ? r : r % a.x_period) * a.d;
    const int64_t so = kSkip ? (a.skip_period == a.rows ? r : r % a.skip_period) * a.d : 0;
    const int64_t yo = r * a.d;
    float v[N][V];
    float s = 0.0f;
    // Few rows (kParamsFirst, kPartials): each warp's latency is the launch's, so all of a row's
    // loads go first; with many rows other warps hide it and the registers cost occupancy.
    if constexpr (kPartials) load_partial_row<T, P, V, N>(a, yo, t, tpr, nv, v);
    else if constexpr (kParamsFirst) load_row<T, P, V, N, kSkip>(a, xo, so, t, tpr, nv, v);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int c = i * tpr + t;
      if (c < nv) {
        if constexpr (!kPartials && !kParamsFirst) load_input<T, P, V, kSkip>(a, xo, so, int64_t(c) * V, v[i]);
#pragma unroll
        for (int j = 0; j < V; ++j) s += v[i][j];
      }
    }
    const float mean = (kWarp ? warp_sum(s) : block_sum(s)) / d;
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (i * tpr + t < nv) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float c = v[i][j] - mean;
          q += c * c;
        }
      }
    }
    const float var = (kWarp ? warp_sum(q) : block_sum(q)) / d;
    const float inv = 1.0f / sqrtf(var + a.epsilon);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int c = i * tpr + t;
      if (c < nv) {
        if constexpr (kParamsFirst) {
          store_output<T, P, V>(a, yo, int64_t(c) * V, v[i], g[i], b[i], mean, inv);
        } else {
          float gi[V], bi[V];
          load_params<P, V>(a, int64_t(c) * V, gi, bi);
          store_output<T, P, V>(a, yo, int64_t(c) * V, v[i], gi, bi, mean, inv);
        }
      }
    }
    if (t == 0) {
      store_stat(a.mean, a.stat_dtype, r, mean);
      store_stat(a.inv_std, a.stat_dtype, r, inv);
    }
  }
}

// Rows too long for registers: one block per row, three sweeps over memory (sum, centered
// squares, output); the row mostly stays in L2 between sweeps.
template <class T, class P, int V, bool kSkip>
__global__ void __launch_bounds__(kMaxBlockThreads) row_norm_long(const RowNormLaunch a) {
  wait_prior_grids();
  allow_dependent_grids();
  issue_l2_prefetch(a.prefetch);
  const int64_t nv = a.d / V;
  const float d = float(a.d);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t xo = (a.x_period == a.rows ? r : r % a.x_period) * a.d;
    const int64_t so = kSkip ? (a.skip_period == a.rows ? r : r % a.skip_period) * a.d : 0;
    const int64_t yo = r * a.d;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V];
      load_input<T, P, V, kSkip>(a, xo, so, c * V, v);
#pragma unroll
      for (int j = 0; j < V; ++j) s += v[j];
    }
    const float mean = block_sum(s) / d;
    float q = 0.0f;
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V];
      load_input<T, P, V, kSkip>(a, xo, so, c * V, v);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float e = v[j] - mean;
        q += e * e;
      }
    }
    const float inv = 1.0f / sqrtf(block_sum(q) / d + a.epsilon);
    for (int64_t c = threadIdx.x; c < nv; c += blockDim.x) {
      float v[V], g[V], b[V];
      load_input<T, P, V, kSkip>(a, xo, so, c * V, v);
      load_params<P, V>(a, c * V, g, b);
      store_output<T, P, V>(a, yo, c * V, v, g, b, mean, inv);
    }
    if (threadIdx.x == 0) {
      store_stat(a.mean, a.stat_dtype, r, mean);
      store_stat(a.inv_std, a.stat_dtype, r, inv);
    }
  }
}

unsigned grid_size(int64_t work_items, int sm_count, int per_sm) {
  const int64_t cap = sm_count > 0 ? int64_t(sm_count) * per_sm : 65535;
  return unsigned(std::max<int64_t>(1, std::min(work_items, cap)));
}

// Launches of at most this many rows are latency-bound: gamma/beta load with the row.
constexpr int64_t kFewRows = 512;

template <class T, class P, int V, bool kSkip, bool kPartials = false>
cudaError_t launch_with(const RowNormLaunch& a, cudaStream_t stream) {
  const int64_t nv = a.d / V;
  if (nv <= 32 * kMaxWarpVecs) {
    const int rows_per_block = kWarpModeThreads / 32;
    // Up to 64 resident warps per SM; rows beyond the grid loop (gamma/beta stay in registers).
    const unsigned blocks = grid_size((a.rows + rows_per_block - 1) / rows_per_block, a.sm_count, 16);
    auto go = [&](auto kernel) { return launch_dependent(kernel, blocks, kWarpModeThreads, 0, stream, a); };
    if (nv <= 32) return go(row_norm_cached<T, P, V, 1, kSkip, true, false, kPartials>);
    if (nv <= 64) return go(row_norm_cached<T, P, V, 2, kSkip, true, false, kPartials>);
    // Hidden 768 in halves: parameters first at batch 1; else no idle register slot for them.
    if (nv <= 96 && a.rows <= kFewRows) return go(row_norm_cached<T, P, V, 3, kSkip, true, true, kPartials>);
    if (nv <= 96) return go(row_norm_cached<T, P, V, 3, kSkip, true, false, kPartials>);
    return go(row_norm_cached<T, P, V, kMaxWarpVecs, kSkip, true, false, kPartials>);
  }
  if constexpr (kPartials) return cudaErrorInvalidValue;  // row_norm_takes_partials: warp rows only
  // Scalar loads need an address register each: hold fewer of them.
  constexpr int kBlockVecs = V == 1 ? kBlockElems / 2 : kBlockElems / V;
  if (nv <= int64_t(kMaxBlockThreads) * kBlockVecs) {
    int64_t threads = (nv + kBlockVecs - 1) / kBlockVecs;
    threads = std::min<int64_t>(kMaxBlockThreads, std::max<int64_t>(128, (threads + 31) / 32 * 32));
    const unsigned blocks = grid_size(a.rows, a.sm_count, int(2048 / threads));
    return launch_dependent(row_norm_cached<T, P, V, kBlockVecs, kSkip, false>, blocks, unsigned(threads), 0, stream,
                            a);
  }
  return launch_dependent(row_norm_long<T, P, V, kSkip>, grid_size(a.rows, a.sm_count, 4), kMaxBlockThreads, 0,
                          stream, a);
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class T, class P>
cudaError_t launch_typed(const RowNormLaunch& a, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  constexpr size_t kRowAlign = sizeof(T) * V, kParamAlign = sizeof(P) * V;
  const bool vec = a.d % V == 0 && aligned(a.x, kRowAlign) && aligned(a.skip, kRowAlign) && aligned(a.y, kRowAlign) &&
                   aligned(a.sum, kRowAlign) && aligned(a.gamma, kParamAlign) && aligned(a.beta, kParamAlign) &&
                   aligned(a.bias, kParamAlign);
  const bool skip = a.skip != nullptr;
  if (a.partials) {
    if constexpr (sizeof(T) == 2 && std::is_same_v<T, P>) {
      if (!vec || !aligned(a.partials, 32) || a.parts < 1 || a.parts > kMaxRowNormParts || a.x_period != a.rows ||
          (a.skip && a.skip_period != a.rows))
        return cudaErrorInvalidValue;
      return launch_with<T, P, V, false, true>(a, stream);
    }
    return cudaErrorInvalidValue;
  }
  if (vec) return skip ? launch_with<T, P, V, true>(a, stream) : launch_with<T, P, V, false>(a, stream);
  return skip ? launch_with<T, P, 1, true>(a, stream) : launch_with<T, P, 1, false>(a, stream);
}

template <class T>
__global__ void expand_param_kernel(const T* src, const ParamBroadcast b, int64_t d, float* dst) {
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < d; k += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = k, off = 0;
    for (int i = b.rank - 1; i >= 0; --i) {
      off += (rem % b.dims[i]) * b.strides[i];
      rem /= b.dims[i];
    }
    dst[k] = to_float(src[off]);
  }
}

}  // namespace

bool row_norm_takes_partials(DType dtype, int64_t d) {
  return (dtype == DType::kFloat16 || dtype == DType::kBFloat16) && d > 0 && d % 8 == 0 &&
         d / 8 <= 32 * kMaxWarpVecs;
}

cudaError_t launch_row_norm(const RowNormLaunch& a, cudaStream_t stream) {
  if (a.rows <= 0 || a.d <= 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (a.param_dtype == a.dtype) e = launch_typed<T, T>(a, stream);
    else if (a.param_dtype == DType::kFloat32) e = launch_typed<T, float>(a, stream);
  });
  return e;
}

cudaError_t launch_expand_param(const void* src, DType src_dtype, const ParamBroadcast& b, int64_t d, float* dst,
                                cudaStream_t stream) {
  if (d <= 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(src_dtype, [&](auto tag) {
    using T = decltype(tag);
    expand_param_kernel<T><<<blocks_for(d, 256), 256, 0, stream>>>(static_cast<const T*>(src), b, d, dst);
    e = cudaGetLastError();
  });
  return e;
}

}  // namespace ingot::cuda
