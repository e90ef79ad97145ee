// The SM clock, board power and clock-event reasons of the process's GPU, sampled through NVML
// (the driver's management library, what nvidia-smi reads) on a thread of its own while ingot
// bench times runs (DeviceBackend::monitor_clocks).
//
// NVML is opened with dlopen: it comes with the driver (libnvidia-ml.so.1), not with the CUDA
// toolkit this builds against (no header or link stub there), and a process without the driver
// library must still load ingot and run CPU engines. The handful of entry points used are
// declared in the .cc from NVML's documented C API.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "ingot/status.h"
#include "runtime/device.h"

namespace ingot::cuda {

// One sample: the SM clock, board power and NVML's clock-event reason bits at that moment.
struct ClockSample {
  double sm_mhz = 0;
  double power_w = 0;
  uint64_t reasons = 0;
};

// The report of a run of samples: medians, extremes, and each known reason's share of the
// samples, largest first (unknown bits are left out); energy_j is left unknown.
DeviceClockReport summarize_clock_samples(const std::vector<ClockSample>& samples, double sm_mhz_max,
                                          double power_limit_w);

// Samples the CUDA device `device` every `period` until stop(), and reads its energy counter at
// both ends; an error naming what is missing when NVML cannot be opened or does not know the
// device.
Expected<std::unique_ptr<DeviceClockMonitor>> start_clock_monitor(int device, std::chrono::milliseconds period);

}  // namespace ingot::cuda
