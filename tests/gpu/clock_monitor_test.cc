// The GPU clock monitor of ingot bench (cuda_clock_monitor.h): the summary of samples (host
// only, runs in CI), and NVML sampling through the backend while a kernel keeps the GPU busy.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "backends/cuda/cuda_clock_monitor.h"
#include "backends/cuda/cuda_stream_hold.h"
#include "gpu_test_util.h"

namespace ingot::cuda {
namespace {

TEST(CudaClockMonitor, SummarizesSamples) {
  // Reason bits: 0x4 power cap, 0x20 software thermal, 0x1 idle; 0x1000 is no reason ingot knows.
  const std::vector<ClockSample> samples = {
      {1725, 690, 0x4}, {1515, 702, 0x4 | 0x20}, {1755, 688, 0x4}, {1980, 120, 0x1 | 0x1000}, {1740, 695, 0x4}};
  const DeviceClockReport r = summarize_clock_samples(samples, 1980, 700);
  EXPECT_EQ(r.samples, 5);
  EXPECT_DOUBLE_EQ(r.sm_mhz_median, 1740);
  EXPECT_DOUBLE_EQ(r.sm_mhz_min, 1515);
  EXPECT_DOUBLE_EQ(r.sm_mhz_max, 1980);
  EXPECT_DOUBLE_EQ(r.power_w_median, 690);
  EXPECT_DOUBLE_EQ(r.power_w_max, 702);
  EXPECT_DOUBLE_EQ(r.power_limit_w, 700);
  ASSERT_EQ(r.held_by.size(), 3u);  // largest share first; ties keep the order of kReasons
  EXPECT_EQ(r.held_by[0].first, "power cap");
  EXPECT_DOUBLE_EQ(r.held_by[0].second, 0.8);
  EXPECT_EQ(r.held_by[1].first, "thermal (software)");
  EXPECT_DOUBLE_EQ(r.held_by[1].second, 0.2);
  EXPECT_EQ(r.held_by[2].first, "idle");

  const std::vector<ClockSample> even = {{1500, 300, 0}, {1900, 500, 0}};
  const DeviceClockReport e = summarize_clock_samples(even, 0, 0);
  EXPECT_DOUBLE_EQ(e.sm_mhz_median, 1700);  // the mean of the middle two
  EXPECT_DOUBLE_EQ(e.power_w_median, 400);
  EXPECT_TRUE(e.held_by.empty());

  const DeviceClockReport none = summarize_clock_samples({}, 1980, 700);
  EXPECT_EQ(none.samples, 0);
  EXPECT_LT(none.energy_j, 0);  // left to the monitor
  EXPECT_DOUBLE_EQ(none.sm_mhz_max, 1980);
}

TEST(CudaClockMonitor, SamplesWhileAKernelRuns) {
  INGOT_REQUIRE_GPU();
  const DeviceBackend* backend = find_device_backend("cuda");
  ASSERT_NE(backend, nullptr);
  auto monitor = backend->monitor_clocks();
  ASSERT_TRUE(monitor) << monitor.status().message();  // a machine with a GPU has the driver's NVML
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(launch_stream_hold(stream, 300000), cudaSuccess);  // 300 ms of one spinning kernel
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const DeviceClockReport r = (*monitor)->stop();
  cudaStreamDestroy(stream);
  EXPECT_GE(r.samples, 8);  // every 20 ms, and one at each end
  EXPECT_GT(r.sm_mhz_min, 0);
  EXPECT_GE(r.sm_mhz_median, r.sm_mhz_min);
  EXPECT_GE(r.sm_mhz_max, r.sm_mhz_median);
  EXPECT_GT(r.power_w_median, 0);
  EXPECT_GE(r.power_w_max, r.power_w_median);
  EXPECT_GT(r.power_limit_w, 0);
  // The board's energy counter over ~0.3 s: at least its idle power's worth (tens of watts).
  EXPECT_GT(r.energy_j, 0.3 * 20.0);
  EXPECT_LT(r.energy_j, 2.0 * r.power_limit_w);
  // Stopping twice is harmless; the second report has the same samples.
  EXPECT_EQ((*monitor)->stop().samples, r.samples);
}

}  // namespace
}  // namespace ingot::cuda
