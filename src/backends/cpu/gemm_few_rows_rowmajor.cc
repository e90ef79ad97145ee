// gemm_few_rows_rowmajor: products of a few rows on row-major float32 weights, for CPUs with AVX2
// and FMA but no AVX-512 (see gemm_few_rows.h for why a few rows need their own kernel).
//
// There oneDNN's AVX2 matmul reads only plain layouts (row-major or transposed; blocked ones fall
// to its reference code), so the constant weights stay row-major, and oneDNN's few-row products
// stream them at ~10 GB/s where one thread's read loop reaches 28 GB/s (two: 32). A kernel that
// walks 16-column strips down the whole of K reads a line of every row, 3-12 KB apart, and loses
// to the TLB and the prefetcher (developer session 13). This one takes W in blocks of kKBlock
// rows, each block one contiguous stretch read as kKBlock interleaved streams 16 columns at a
// time, with a 6-row x 16-column tile of the products in registers down the block (2 loads and
// 6 broadcasts for 12 FMAs a row of W). The threads split K, so each thread's weights are one
// contiguous region; each keeps an M x N float32 accumulator of its own (L1/L2), and the
// accumulators are summed with the bias and the activation at the end. Software prefetching
// ahead along the rows made it slower (the hardware prefetcher follows the streams).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/gemm_few_rows.h"
#include "runtime/parallel.h"

namespace ingot::cpu {
namespace {

using fused_matmul::Activation;

constexpr int kKBlock = 16;  // rows of W per sweep of the accumulator
// A thread's share of K below which one thread does it all (its stream would be too short).
constexpr int64_t kMinRowsPerThread = 64;

// The accumulator's row pitch: N plus 16 floats, so that rows never lie a multiple of 4 KB apart
// (12 KB at N = 3072): the core would take the load of one row's C for a read of the store to the
// previous row's (4K aliasing) and run the rows one after another, 2.4x slower at M = 12.
int64_t accumulator_pitch(int64_t N) { return N + 16; }

// One 16-column tile of a block of kKBlock rows of W for MT rows of A, the products kept in
// registers (MT x 2 accumulators) down the block: per row of W two loads and MT broadcasts for
// 2·MT FMAs. C (row pitch ldc) holds the sums so far.
template <int MT>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(const float* a, int64_t lda, const float* w,
                                                                   int64_t N, float* c, int64_t ldc) {
  __m256 c0[MT], c1[MT];
  for (int m = 0; m < MT; ++m) c0[m] = _mm256_loadu_ps(c + m * ldc), c1[m] = _mm256_loadu_ps(c + m * ldc + 8);
#pragma GCC unroll 16
  for (int k = 0; k < kKBlock; ++k) {
    const __m256 b0 = _mm256_loadu_ps(w + k * N), b1 = _mm256_loadu_ps(w + k * N + 8);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m256 x = _mm256_broadcast_ss(a + m * lda + k);
      c0[m] = _mm256_fmadd_ps(x, b0, c0[m]);
      c1[m] = _mm256_fmadd_ps(x, b1, c1[m]);
    }
  }
  for (int m = 0; m < MT; ++m) _mm256_storeu_ps(c + m * ldc, c0[m]), _mm256_storeu_ps(c + m * ldc + 8, c1[m]);
}

// C[M, N] (row pitch ldc) += A[:, k0:k0+kKBlock] · W[k0:k0+kKBlock, :]: the block's rows are one
// contiguous stretch of W, read as kKBlock interleaved streams 16 columns at a time.
__attribute__((target("avx2,fma"))) void add_block(const float* A, int64_t lda, int64_t M, const float* w, int64_t N,
                                                   float* C, int64_t ldc) {
  int64_t j = 0;
  for (; j + 16 <= N; j += 16) {
    int64_t m = 0;
    for (; m + 6 <= M; m += 6) tile<6>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc);
    switch (M - m) {
      case 5: tile<5>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc); break;
      case 4: tile<4>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc); break;
      case 3: tile<3>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc); break;
      case 2: tile<2>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc); break;
      case 1: tile<1>(A + m * lda, lda, w + j, N, C + m * ldc + j, ldc); break;
      default: break;
    }
  }
  for (; j < N; ++j)  // the last N % 16 columns
    for (int64_t m = 0; m < M; ++m) {
      float s = C[m * ldc + j];
      for (int r = 0; r < kKBlock; ++r) s += A[m * lda + r] * w[r * N + j];
      C[m * ldc + j] = s;
    }
}

// C[M, N] (row pitch ldc) = A[:, k0:k1] · W[k0:k1, :].
__attribute__((target("avx2,fma"))) void accumulate(const float* A, int64_t M, int64_t K, int64_t N, const float* W,
                                                    int64_t k0, int64_t k1, float* C, int64_t ldc) {
  std::fill(C, C + M * ldc, 0.0f);
  int64_t k = k0;
  for (; k + kKBlock <= k1; k += kKBlock) add_block(A + k, K, M, W + k * N, N, C, ldc);
  for (; k < k1; ++k)  // the last rows, one at a time
    for (int64_t m = 0; m < M; ++m) {
      const __m256 a = _mm256_set1_ps(A[m * K + k]);
      const float* w = W + k * N;
      float* c = C + m * ldc;
      int64_t j = 0;
      for (; j + 8 <= N; j += 8) _mm256_storeu_ps(c + j, _mm256_fmadd_ps(a, _mm256_loadu_ps(w + j), _mm256_loadu_ps(c + j)));
      for (; j < N; ++j) c[j] += A[m * K + k] * w[j];
    }
}

// Y[rows] = act(sum of the partial accumulators + bias).
__attribute__((target("avx2,fma"))) void finish(const std::vector<float*>& parts, int64_t ldc, int64_t N,
                                                const float* bias, Activation act, int64_t r0, int64_t r1, float* Y) {
  for (int64_t m = r0; m < r1; ++m) {
    float* y = Y + m * N;
    const float* p0 = parts[0] + m * ldc;
    for (int64_t j = 0; j < N; ++j) y[j] = p0[j] + (bias ? bias[j] : 0.0f);
    for (size_t t = 1; t < parts.size(); ++t) {
      const float* p = parts[t] + m * ldc;
      for (int64_t j = 0; j < N; ++j) y[j] += p[j];
    }
    activate_row(y, N, act);
  }
}

}  // namespace

bool few_rows_rowmajor_supported() {
  static const bool usable =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !__builtin_cpu_supports("avx512f");
  return usable;
}

void gemm_few_rows_rowmajor(const float* A, int64_t M, int64_t K, int64_t N, const float* W, const float* bias,
                            Activation act, float* Y) {
  if (M <= 0 || N <= 0) return;
  const int threads = int(std::clamp<int64_t>(K / kMinRowsPerThread, 1, num_threads()));
  // Every thread accumulates into a part of its own (the calling thread's buffer, reused across
  // calls); the finishing pass sums the parts into Y.
  const int64_t ldc = accumulator_pitch(N), part = M * ldc + 16;  // + 16: parts 4 KB-misaligned too
  thread_local std::vector<float> scratch;
  if (scratch.size() < size_t(threads * part)) scratch.resize(size_t(threads * part));
  std::vector<float*> parts(size_t(threads), nullptr);
  for (int t = 0; t < threads; ++t) parts[size_t(t)] = scratch.data() + t * part;
  if (threads == 1 || omp_in_parallel()) {
    accumulate(A, M, K, N, W, 0, K, parts[0], ldc);
    parts.resize(1);
  } else {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      // Block-aligned ranges, so only the last thread has a partial block.
      const int64_t blocks = (K + kKBlock - 1) / kKBlock;
      const int64_t k0 = std::min(K, blocks * t / threads * kKBlock);
      const int64_t k1 = std::min(K, blocks * (t + 1) / threads * kKBlock);
      accumulate(A, M, K, N, W, k0, k1, parts[size_t(t)], ldc);
    }
  }
  parallel_for(M, N * int64_t(parts.size()) * 4, [&](int64_t r0, int64_t r1) { finish(parts, ldc, N, bias, act, r0, r1, Y); });
}

}  // namespace ingot::cpu
