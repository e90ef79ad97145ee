// Graph tuning's hooks in lt_gemm (lt_gemm.h): a product run under a GemmTuneRecorder is
// recorded with its ranked cuBLASLt candidates, every one of which computes the product (graph
// tuning may keep any of them), and a finished choice is final.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/lt_gemm.h"
#include "gpu_test_util.h"
#include "lt_gemm_test_util.h"

namespace ingot::cuda {
namespace {

TEST(GemmGraphTune, RecordedCandidatesAllComputeTheProduct) {
  INGOT_REQUIRE_GPU();
  constexpr int64_t M = 96, N = 320, K = 640;  // a shape no other test runs: a fresh plan
  testing::LtGemmCase product;
  ASSERT_NO_FATAL_FAILURE(product.set_up(M, N, K, 71, false));
  auto run_and_check = [&](const std::string& what) { product.run_and_check(what, 2e-3f, 2e-3f); };

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
}

}  // namespace
}  // namespace ingot::cuda
