// The dependent-launch switch (backends/cuda/cuda_dependent_launch.h): INGOT_CUDA_PDL's modes and
// the auto mode's per-thread scope. Host logic only, so these cases run without a GPU too; that
// dependent launch changes no output is checked on the fixtures in engine_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "backends/cuda/cuda_dependent_launch.h"
#include "gpu_test_util.h"

namespace ingot::cuda {
namespace {

// INGOT_CUDA_PDL for the test's lifetime (unset when value is null).
struct PdlEnv : ingot::testing::ScopedEnv {
  explicit PdlEnv(const char* value) : ScopedEnv("INGOT_CUDA_PDL", value) {}
};

TEST(DependentLaunchSwitch, ModesOfTheVariable) {
  for (auto [value, mode] : {std::pair<const char*, DependentLaunchMode>{nullptr, DependentLaunchMode::kAuto},
                             {"0", DependentLaunchMode::kOff},
                             {"yes", DependentLaunchMode::kAuto},
                             {"1", DependentLaunchMode::kOn},
                             {"auto", DependentLaunchMode::kAuto}}) {
    PdlEnv env(value);
    EXPECT_EQ(dependent_launch_mode(), mode) << (value ? value : "(unset)");
  }
}

TEST(DependentLaunchSwitch, OnAndOffIgnoreScopes) {
  {
    PdlEnv env("1");
    const DependentLaunchScope off(false);
    EXPECT_TRUE(dependent_launch_enabled());
  }
  PdlEnv env("0");
  const DependentLaunchScope on(true);
  EXPECT_FALSE(dependent_launch_enabled());
}

TEST(DependentLaunchSwitch, AutoFollowsTheInnermostScopeOfThisThread) {
  PdlEnv env(nullptr);  // auto is the default
  EXPECT_FALSE(dependent_launch_enabled());  // no scope: ordinary launches (a shape's eager first run)
  {
    const DependentLaunchScope on(true);
    EXPECT_TRUE(dependent_launch_enabled());
    bool other_thread = true;
    std::thread([&] { other_thread = dependent_launch_enabled(); }).join();
    EXPECT_FALSE(other_thread);  // another context's thread is not in this scope
    {
      const DependentLaunchScope off(false);
      EXPECT_FALSE(dependent_launch_enabled());
    }
    EXPECT_TRUE(dependent_launch_enabled());
  }
  EXPECT_FALSE(dependent_launch_enabled());
}

TEST(DependentLaunchSwitch, AutoPaysForSmallActivationsOnly) {
  EXPECT_TRUE(dependent_launch_pays(128 * 3072 * 2));        // BERT-base b1's widest activation
  EXPECT_FALSE(dependent_launch_pays(32 * 128 * 3072 * 2));  // and at b32
  EXPECT_TRUE(dependent_launch_pays(kSmallGraphActivationBytes));
  EXPECT_FALSE(dependent_launch_pays(kSmallGraphActivationBytes + 1));
}

TEST(DependentLaunchSwitch, LargeGraphsTakeItForStepsOfSmallOutputs) {
  EXPECT_TRUE(step_dependent_launch_pays(32 * 3072 * 2));         // a b32 classifier tail's FFN output
  EXPECT_FALSE(step_dependent_launch_pays(32 * 128 * 768 * 2));   // a b32 layer's LayerNorm
  EXPECT_TRUE(step_dependent_launch_pays(kSmallStepOutputBytes));
  EXPECT_FALSE(step_dependent_launch_pays(kSmallStepOutputBytes + 1));
}

}  // namespace
}  // namespace ingot::cuda
