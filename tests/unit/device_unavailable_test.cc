// Asking for the cuda device where there is none (no GPU, or a build without CUDA) is one clear
// error, and CPU engines are unaffected.
#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "runtime/device.h"

namespace ingot::testing {
namespace {

TEST(DeviceUnavailable, CudaWithoutAGpuIsOneClearError) {
  const DeviceBackend* b = find_device_backend("cuda");
  if (b && b->properties().has_value()) GTEST_SKIP() << "a GPU is present";
  Model m = single_node_model("Relu", {random_tensor({2, 3}, 1)}, 1);
  EngineOptions eo;
  eo.device = "cuda";
  auto e = Engine::from_model(m, eo);
  ASSERT_FALSE(e.has_value());
  const std::string& msg = e.status().message();
  EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("no CUDA GPU") != std::string::npos || msg.find("built without CUDA") != std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  auto cpu = Engine::from_model(m);
  EXPECT_TRUE(cpu.has_value());
}

TEST(DeviceUnavailable, UnknownDeviceIsRefused) {
  Model m = single_node_model("Relu", {random_tensor({2, 3}, 1)}, 1);
  EngineOptions eo;
  eo.device = "tpu";
  auto e = Engine::from_model(m, eo);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("unknown device 'tpu'"), std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
