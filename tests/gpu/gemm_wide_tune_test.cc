// Wide tuning (lt_gemm_wide_tune.h): the ranking is by GPU time and leaves out configurations
// cuBLASLt refused; a large product's first run inside a WideTuneScope screens the configurations
// of the heuristic's algorithms, every one it ranks computes the product (bias and residual), and
// its tactic is collected; a given tactic is run as given; the engine file's form of tactics
// (cuda_tuning.h) round-trips and refuses malformed ones.
#include <gtest/gtest.h>

#include <cublasLt.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cuda/cuda_stream_hold.h"
#include "backends/cuda/cuda_tuning.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/lt_gemm_wide_tune.h"
#include "gpu_test_util.h"
#include "lt_gemm_test_util.h"

namespace ingot::cuda {
namespace {

// Stand-ins for configurations: data[0] indexes a GPU time; the launch holds the stream that long.
TEST(GemmWideTune, RanksByGpuTimeWithoutRefusedConfigurations) {
  INGOT_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const int micros[] = {60, 15, 45, 30, 75, 20};  // index 1 and 5 are refused below
  std::vector<cublasLtMatmulAlgo_t> configs(std::size(micros));
  for (size_t i = 0; i < configs.size(); ++i) configs[i].data[0] = i;
  const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    const size_t i = size_t(algo.data[0]);
    return i != 1 && i != 5 && launch_stream_hold(stream, micros[i]) == cudaSuccess;
  };
  const std::vector<cublasLtMatmulAlgo_t> ranked = rank_configurations(stream, configs, 3, launch);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].data[0], 3u);
  EXPECT_EQ(ranked[1].data[0], 2u);
  EXPECT_EQ(ranked[2].data[0], 0u);
  EXPECT_EQ(rank_configurations(stream, configs, 10, launch).size(), 4u);
  cudaStreamDestroy(stream);
}

TEST(GemmWideTune, EveryRankedConfigurationComputesTheProduct) {
  INGOT_REQUIRE_GPU();
  // 2·M·N·K = 1.07e9 ≥ kWideTuneMinFlop; a shape no other test runs (a fresh plan).
  constexpr int64_t M = 512, N = 1344, K = 776;
  static_assert(2.0 * M * N * K >= kWideTuneMinFlop);
  testing::LtGemmCase product;
  ASSERT_NO_FATAL_FAILURE(product.set_up(M, N, K, 81, true));
  GemmDesc& d = product.d;
  auto run_and_check = [&](const std::string& what) { product.run_and_check(what, 4e-3f, 2e-3f); };

  GemmPlan* plan = nullptr;
  std::vector<GemmTactic> tactics;
  {
    const WideTuneScope scope;
    const GemmTuneRecorder recorder;
    const auto t0 = std::chrono::steady_clock::now();
    run_and_check("first run");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("wide tuning of %s: %.3f s in its first run\n", "512x1344x776", s);
    ASSERT_EQ(recorder.plans().size(), 1u);
    plan = recorder.plans()[0];
    tactics = scope.tactics();
  }
  ASSERT_EQ(tactics.size(), 1u);
  EXPECT_EQ(tactics[0].product.rfind("m=512 n=1344 k=776 ", 0), 0u) << tactics[0].product;
  const int n = gemm_choices(plan);
  EXPECT_EQ(n, kGraphTuneCandidates) << "wide tuning ranked " << n << " configurations of " << gemm_plan_name(plan);
  for (int i = n - 1; i >= 0; --i) {
    set_gemm_choice(plan, i);
    run_and_check("ranked configuration " + std::to_string(i));
  }

  // A tactic given for a product that has not run (the same with 264 rows, the second-ranked
  // configuration) is what that product runs, without tuning.
  set_gemm_choice(plan, 1);
  GemmTactic given;
  {
    const WideTuneScope scope;
    run_and_check("second-ranked configuration");
    ASSERT_EQ(scope.tactics().size(), 1u);
    given = scope.tactics()[0];
  }
  given.product.replace(0, std::string("m=512").size(), "m=264");
  add_gemm_tactics({given});
  d.m = 264;
  {
    const WideTuneScope scope;
    const auto t0 = std::chrono::steady_clock::now();
    run_and_check("the given tactic");  // the first 264 rows of the same product
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5) << "it was tuned";
    const std::vector<GemmTactic> ran = scope.tactics();
    ASSERT_EQ(ran.size(), 1u);
    EXPECT_EQ(ran[0].product, given.product);
    EXPECT_EQ(ran[0].config, given.config);
    EXPECT_NE(ran[0].config, tactics[0].config) << "the given configuration is the tuned one: the test shows nothing";
  }
}

// Host only (runs without a GPU too).
TEST(CudaTuning, TacticsRoundTripThroughTheEngineFilesForm) {
  const std::vector<GemmTactic> tactics = {{"m=4096 n=2304 k=768 ...", {66, 406, 35, 3, 0, 0, 1, 1, 0}},
                                           {"m=4096 n=768 k=768 ...", {66, 495, 35, 2, 0, 0, 7, 1, 0}}};
  const nlohmann::json j = tuning_json(tactics, nullptr);
  auto back = tactics_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*back)[i].product, tactics[i].product);
    EXPECT_EQ((*back)[i].config, tactics[i].config);
  }
  // Merged: a product already there takes the new configuration; others are kept.
  GemmTactic changed = tactics[1];
  changed.config[6] = 5;
  auto merged = tactics_from_json(tuning_json({changed}, j));
  ASSERT_TRUE(merged.has_value());
  ASSERT_EQ(merged->size(), 2u);
  EXPECT_EQ((*merged)[1].config[6], 5);
  EXPECT_EQ((*merged)[0].config, tactics[0].config);
  EXPECT_TRUE(tactics_from_json(nullptr).has_value());

  for (const char* bad : {R"([1, 2])", R"({"cuda_gemm": 3})", R"({"cuda_gemm": [{"product": "p"}]})",
                          R"({"cuda_gemm": [{"product": "p", "config": [1, 2, 3]}]})",
                          R"({"cuda_gemm": [{"product": "p", "config": [1, 2, 3, 4, 5, 6, 7, 8, "x"]}]})"}) {
    auto r = tactics_from_json(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.status().message().find("device_tuning"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace ingot::cuda
