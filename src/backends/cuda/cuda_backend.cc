// Registers the "cuda" device backend. Device 0 of the process (CUDA_VISIBLE_DEVICES picks it).
#include <chrono>
#include <memory>

#include "backends/cuda/cuda_clock_monitor.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_executor.h"

namespace ingot::cuda {
namespace {

std::string version_str(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

class CudaBackend final : public DeviceBackend {
 public:
  Expected<DeviceProperties> properties() const override {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      cudaGetLastError();
      return unsupported(std::string("no CUDA GPU is available (") +
                         (e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports no device") + ")");
    }
    cudaDeviceProp p{};
    INGOT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, 0));
    int driver = 0;
    cudaDriverGetVersion(&driver);
    DeviceProperties d;
    d.name = p.name;
    d.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    d.runtime_version = version_str(CUDART_VERSION);
    d.driver_version = version_str(driver);
    d.total_memory = int64_t(p.totalGlobalMem);
    return d;
  }

  Expected<int64_t> free_memory() const override {
    size_t free = 0, total = 0;
    INGOT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
    return int64_t(free);
  }

  Expected<std::unique_ptr<DeviceExecutor>> create(const Graph& graph, const std::map<std::string, int64_t>& opsets,
                                                   const DeviceCreateOptions& options) const override {
    auto props = properties();
    if (!props) return props.status();
    auto ex = CudaExecutor::create(graph, opsets, options);
    if (!ex) return ex.status();
    return std::unique_ptr<DeviceExecutor>(std::move(*ex));
  }

  // Every 20 ms: nvidia-smi's finest period is 50, and a few-second bench then gets 100+ samples.
  Expected<std::unique_ptr<DeviceClockMonitor>> monitor_clocks() const override {
    auto props = properties();
    if (!props) return props.status();
    return start_clock_monitor(0, std::chrono::milliseconds(20));
  }
};

const bool registered = register_device_backend("cuda", std::make_unique<CudaBackend>());

}  // namespace

Expected<std::unique_ptr<DeviceContext>> CudaExecutor::create_context() const {
  auto c = CudaContext::create(*this);
  if (!c) return c.status();
  return std::unique_ptr<DeviceContext>(std::move(*c));
}

}  // namespace ingot::cuda
