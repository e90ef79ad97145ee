// A float16 product through lt_gemm with its reference on the host: what the tests of cuBLASLt's
// tuning (graph tuning, wide tuning) share. Each runs one product many ways and checks every run.
#pragma once

#include <gtest/gtest.h>

#include <cublasLt.h>
#include <cuda_fp16.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/lt_gemm.h"
#include "gpu_test_util.h"

namespace ingot::testing {

class LtGemmCase {
 public:
  LtGemmCase() = default;
  LtGemmCase(const LtGemmCase&) = delete;
  LtGemmCase& operator=(const LtGemmCase&) = delete;
  ~LtGemmCase() {
    for (void* p : {ws_, dc_, dres_, dbias_, db_, da_})
      if (p) cudaFree(p);
    if (h.lt) cublasLtDestroy(h.lt);
    if (h.stream) cudaStreamDestroy(h.stream);
  }

  // a [M, K] (seed), W [K, N] (seed + 1, within ±0.1) and, with bias_and_residual, bias [N]
  // (seed + 2) and C [M, N] (seed + 3) added in the epilogue; ref = a·W (+ bias + C) in float.
  // Call through ASSERT_NO_FATAL_FAILURE.
  void set_up(int64_t M, int64_t N, int64_t K, uint32_t seed, bool bias_and_residual) {
    const Tensor a = random_of(DType::kFloat16, {M, K}, seed), b = random_of(DType::kFloat16, {K, N}, seed + 1, -0.1, 0.1);
    ref_.assign(size_t(M * N), 0.f);
    Tensor bias, residual;
    if (bias_and_residual) {
      bias = random_of(DType::kFloat16, {N}, seed + 2), residual = random_of(DType::kFloat16, {M, N}, seed + 3);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          ref_[size_t(i * N + j)] = float(bias.data<float16>()[j]) + float(residual.data<float16>()[i * N + j]);
    }
    std::vector<float> bf(size_t(K * N));
    for (size_t i = 0; i < bf.size(); ++i) bf[i] = float(b.data<float16>()[i]);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const float x = float(a.data<float16>()[i * K + k]);
        float* row = &ref_[size_t(i * N)];
        const float* w = &bf[size_t(k * N)];
        for (int64_t j = 0; j < N; ++j) row[j] += x * w[j];
      }

    ASSERT_EQ(cudaStreamCreate(&h.stream), cudaSuccess);
    ASSERT_EQ(cublasLtCreate(&h.lt), CUBLAS_STATUS_SUCCESS);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    h.sm_count = prop.multiProcessorCount;
    ASSERT_EQ(cudaMalloc(&da_, a.nbytes()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db_, b.nbytes()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dc_, size_t(M * N) * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ws_, cuda::kGemmWorkspaceBytes), cudaSuccess);
    h.gemm_workspace = ws_, h.gemm_workspace_bytes = cuda::kGemmWorkspaceBytes;
    ASSERT_EQ(cudaMemcpy(da_, a.raw(), a.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(db_, b.raw(), b.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    d.m = M, d.n = N, d.k = K, d.dtype = DType::kFloat16;
    if (bias_and_residual) {
      ASSERT_EQ(cudaMalloc(&dbias_, bias.nbytes()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&dres_, residual.nbytes()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dbias_, bias.raw(), bias.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dres_, residual.raw(), residual.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
      d.bias = dbias_, d.c_in = dres_, d.beta = 1.0f;
    }
  }

  // lt_gemm into an output of NaN, then its d.m rows (fewer than set_up's when a test shrinks
  // d.m) within atol + rtol·|ref| of the reference.
  void run_and_check(const std::string& what, float atol, float rtol) {
    const size_t n = size_t(d.m * d.n);
    ASSERT_EQ(cudaMemset(dc_, 0xff, n * 2), cudaSuccess);
    ASSERT_TRUE(cuda::lt_gemm(h, d, da_, db_, dc_).is_ok()) << what;
    ASSERT_EQ(cudaStreamSynchronize(h.stream), cudaSuccess);
    std::vector<__half> got(n);
    ASSERT_EQ(cudaMemcpy(got.data(), dc_, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n; ++i) {
      const float g = __half2float(got[i]);
      ASSERT_TRUE(std::fabs(g - ref_[i]) <= atol + rtol * std::fabs(ref_[i]))
          << what << ": element " << i << " " << g << " against " << ref_[i];
    }
  }

  cuda::CudaHandles h;
  cuda::GemmDesc d;

 private:
  std::vector<float> ref_;
  void *da_ = nullptr, *db_ = nullptr, *dbias_ = nullptr, *dres_ = nullptr, *dc_ = nullptr, *ws_ = nullptr;
};

}  // namespace ingot::testing
