// Graph tuning's hooks in lt_gemm (lt_gemm.h): a product run under a GemmTuneRecorder is
// recorded with its ranked cuBLASLt candidates, every one of which computes the product (graph
// tuning may keep any of them), and a finished choice is final.
#include <gtest/gtest.h>

#include <cublasLt.h>
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "backends/cuda/lt_gemm.h"
#include "gpu_test_util.h"

namespace ingot::cuda {
namespace {

TEST(GemmGraphTune, RecordedCandidatesAllComputeTheProduct) {
  INGOT_REQUIRE_GPU();
  constexpr int64_t M = 96, N = 320, K = 640;  // a shape no other test runs: a fresh plan
  Tensor a = testing::random_of(DType::kFloat16, {M, K}, 71), b = testing::random_of(DType::kFloat16, {K, N}, 72, -0.1, 0.1);
  std::vector<float> ref(size_t(M * N), 0.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const float x = float(a.data<float16>()[i * K + k]);
      for (int64_t j = 0; j < N; ++j) ref[size_t(i * N + j)] += x * float(b.data<float16>()[k * N + j]);
    }

  CudaHandles h;
  ASSERT_EQ(cudaStreamCreate(&h.stream), cudaSuccess);
  ASSERT_EQ(cublasLtCreate(&h.lt), CUBLAS_STATUS_SUCCESS);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  h.sm_count = prop.multiProcessorCount;
  void *da = nullptr, *db = nullptr, *dc = nullptr, *ws = nullptr;
  ASSERT_EQ(cudaMalloc(&da, a.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dc, size_t(M * N) * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ws, kGemmWorkspaceBytes), cudaSuccess);
  h.gemm_workspace = ws, h.gemm_workspace_bytes = kGemmWorkspaceBytes;
  ASSERT_EQ(cudaMemcpy(da, a.raw(), a.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.raw(), b.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  GemmDesc d;
  d.m = M, d.n = N, d.k = K, d.dtype = DType::kFloat16;

  auto run_and_check = [&](const std::string& what) {
    ASSERT_EQ(cudaMemset(dc, 0xff, size_t(M * N) * 2), cudaSuccess);  // NaN until written
    ASSERT_TRUE(lt_gemm(h, d, da, db, dc).is_ok()) << what;
    ASSERT_EQ(cudaStreamSynchronize(h.stream), cudaSuccess);
    std::vector<__half> got(size_t(M * N));
    ASSERT_EQ(cudaMemcpy(got.data(), dc, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < got.size(); ++i) {
      const float g = __half2float(got[i]);
      ASSERT_TRUE(std::fabs(g - ref[i]) <= 2e-3f + 2e-3f * std::fabs(ref[i])) << what << ": element " << i << " " << g
                                                                            << " against " << ref[i];
    }
  };

  GemmPlan* plan = nullptr;
  {
    const GemmTuneRecorder recorder;
    run_and_check("first run");
    ASSERT_EQ(recorder.plans().size(), 1u);
    plan = recorder.plans()[0];
    const GemmTuneRecorder inner;  // the innermost recorder takes the calls; the outer one is back after it
    run_and_check("second run");
    EXPECT_EQ(inner.plans().size(), 1u);
  }
  const int n = gemm_choices(plan);
  ASSERT_GE(n, 2) << "cuBLASLt offered one algorithm for " << gemm_plan_name(plan);
  EXPECT_LE(n, kGraphTuneCandidates);
  EXPECT_EQ(gemm_choice(plan), 0);  // the fastest trial first
  for (int i = n - 1; i >= 0; --i) {
    set_gemm_choice(plan, i);
    EXPECT_EQ(gemm_choice(plan), i);
    run_and_check("candidate " + std::to_string(i));
  }
  set_gemm_choice(plan, n - 1);
  finish_gemm_choice(plan);
  EXPECT_EQ(gemm_choices(plan), 1);
  EXPECT_EQ(gemm_choice(plan), n - 1);
  {
    const GemmTuneRecorder recorder;  // a decided product is not offered for tuning again
    run_and_check("after the choice");
    EXPECT_TRUE(recorder.plans().empty());
  }
  cudaFree(ws), cudaFree(dc), cudaFree(db), cudaFree(da);
  cublasLtDestroy(h.lt);
  cudaStreamDestroy(h.stream);
}

}  // namespace
}  // namespace ingot::cuda
