#include "backends/cuda/cuda_clock_monitor.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace ingot::cuda {
namespace {

// NVML's C API, the part used here (nvml.h: nvmlReturn_t is an enum whose success is 0;
// nvmlDevice_t an opaque pointer; NVML_CLOCK_SM is 1; powers in milliwatts).
using NvmlDevice = void*;
constexpr int kNvmlClockSm = 1;

// nvmlClocksEventReason* bits, in the order reported when shares tie.
constexpr std::pair<uint64_t, const char*> kReasons[] = {
    {0x4, "power cap"},             // SwPowerCap
    {0x80, "power brake"},          // HwPowerBrakeSlowdown
    {0x8, "hardware slowdown"},     // HwSlowdown
    {0x20, "thermal (software)"},   // SwThermalSlowdown
    {0x40, "thermal (hardware)"},   // HwThermalSlowdown
    {0x2, "application clocks"},    // ApplicationsClocksSetting
    {0x10, "sync boost"},           // SyncBoost
    {0x100, "display clocks"},      // DisplayClockSetting
    {0x1, "idle"},                  // GpuIdle
};

struct Nvml {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*power)(NvmlDevice, unsigned*) = nullptr;
  int (*power_limit)(NvmlDevice, unsigned*) = nullptr;
  int (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  int (*energy)(NvmlDevice, unsigned long long*) = nullptr;  // millijoules since the driver loaded (Volta on)
  std::string error;  // why NVML is unusable, empty when it is
};

template <typename F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.error = "libnvidia-ml.so.1 (NVML, part of the NVIDIA driver) could not be loaded";
      return n;
    }
    bind(lib, "nvmlDeviceGetTotalEnergyConsumption", n.energy);  // optional: energy_j stays unknown without it
    // Drivers before 535 name the reasons "throttle reasons".
    if (!bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", n.reasons))
      bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", n.reasons);
    if (!bind(lib, "nvmlInit_v2", n.init) || !bind(lib, "nvmlShutdown", n.shutdown) ||
        !bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", n.by_pci_bus_id) ||
        !bind(lib, "nvmlDeviceGetClockInfo", n.clock) || !bind(lib, "nvmlDeviceGetMaxClockInfo", n.max_clock) ||
        !bind(lib, "nvmlDeviceGetPowerUsage", n.power) ||
        !bind(lib, "nvmlDeviceGetEnforcedPowerLimit", n.power_limit) || !n.reasons)
      n.error = "libnvidia-ml.so.1 lacks an entry point ingot reads (driver too old?)";
    return n;
  }();
  return loaded;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

class NvmlClockMonitor final : public DeviceClockMonitor {
 public:
  NvmlClockMonitor(NvmlDevice dev, std::chrono::milliseconds period) : dev_(dev), period_(period) {
    unsigned mhz = 0, mw = 0;
    if (nvml().max_clock(dev_, kNvmlClockSm, &mhz) == 0) sm_mhz_max_ = mhz;
    if (nvml().power_limit(dev_, &mw) == 0) power_limit_w_ = mw / 1000.0;
    millijoules_start_ = millijoules();
    sample();
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) {
        lock.unlock();
        sample();
        lock.lock();
      }
    });
  }
  ~NvmlClockMonitor() override {
    finish();
    nvml().shutdown();
  }

  DeviceClockReport stop() override {
    finish();
    DeviceClockReport r = summarize_clock_samples(samples_, sm_mhz_max_, power_limit_w_);
    if (millijoules_start_ >= 0 && millijoules_end_ >= millijoules_start_)
      r.energy_j = double(millijoules_end_ - millijoules_start_) / 1000.0;
    return r;
  }

 private:
  // The board's energy counter, or -1 when NVML has none for it.
  int64_t millijoules() const {
    unsigned long long mj = 0;
    return nvml().energy && nvml().energy(dev_, &mj) == 0 ? int64_t(mj) : -1;
  }
  void sample() {
    unsigned mhz = 0, mw = 0;
    unsigned long long bits = 0;
    if (nvml().clock(dev_, kNvmlClockSm, &mhz) != 0 || nvml().power(dev_, &mw) != 0 || nvml().reasons(dev_, &bits) != 0)
      return;  // a sample NVML could not take is left out
    samples_.push_back({double(mhz), mw / 1000.0, uint64_t(bits)});
  }
  void finish() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    sample();  // the last moment counts too: a short span still gets two samples
    millijoules_end_ = millijoules();
  }

  NvmlDevice dev_;
  std::chrono::milliseconds period_;
  double sm_mhz_max_ = 0, power_limit_w_ = 0;
  int64_t millijoules_start_ = -1, millijoules_end_ = -1;
  std::vector<ClockSample> samples_;  // written by the sampling thread until it is joined
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

DeviceClockReport summarize_clock_samples(const std::vector<ClockSample>& samples, double sm_mhz_max,
                                          double power_limit_w) {
  DeviceClockReport r;
  r.sm_mhz_max = sm_mhz_max;
  r.power_limit_w = power_limit_w;
  r.samples = int(samples.size());
  if (samples.empty()) return r;
  std::vector<double> mhz, watts;
  for (const ClockSample& s : samples) mhz.push_back(s.sm_mhz), watts.push_back(s.power_w);
  r.sm_mhz_median = median_of(mhz);
  r.sm_mhz_min = *std::min_element(mhz.begin(), mhz.end());
  r.power_w_median = median_of(watts);
  r.power_w_max = *std::max_element(watts.begin(), watts.end());
  for (const auto& [bit, name] : kReasons) {
    const auto n = std::count_if(samples.begin(), samples.end(), [bit = bit](const ClockSample& s) { return s.reasons & bit; });
    if (n > 0) r.held_by.emplace_back(name, double(n) / double(samples.size()));
  }
  std::stable_sort(r.held_by.begin(), r.held_by.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return r;
}

Expected<std::unique_ptr<DeviceClockMonitor>> start_clock_monitor(int device, std::chrono::milliseconds period) {
  const Nvml& n = nvml();
  if (!n.error.empty()) return unsupported(n.error);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, int(sizeof(bus_id)), device) != cudaSuccess) {
    cudaGetLastError();
    return unsupported("CUDA device " + std::to_string(device) + " has no PCI bus id to find it in NVML by");
  }
  if (const int e = n.init(); e != 0) return unsupported("NVML did not initialise (nvmlInit_v2 returned " + std::to_string(e) + ")");
  NvmlDevice dev = nullptr;
  if (const int e = n.by_pci_bus_id(bus_id, &dev); e != 0) {
    n.shutdown();
    return unsupported(std::string("NVML does not know the GPU at PCI bus id ") + bus_id + " (error " + std::to_string(e) + ")");
  }
  return std::unique_ptr<DeviceClockMonitor>(std::make_unique<NvmlClockMonitor>(dev, period));
}

}  // namespace ingot::cuda
