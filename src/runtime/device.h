// Devices other than the CPU (today: CUDA GPUs) plug in here. The core sees only this
// interface and never includes a device SDK's headers: a build without CUDA simply has no
// "cuda" backend registered, and asking for one says so.
//
// A backend turns an optimized graph into a DeviceExecutor (kernels chosen, weights uploaded,
// immutable, shared by threads); each ExecutionContext owns a DeviceContext (a stream, the
// activation arena, pinned staging buffers, captured graphs) and runs host tensors in, host
// tensors out.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "plan/memory_plan.h"

namespace ingot {

struct DeviceProperties {
  std::string name;                // "NVIDIA H100 80GB HBM3"
  std::string compute_capability;  // "9.0"
  std::string runtime_version;     // the CUDA runtime the backend was built with, "13.0"
  std::string driver_version;      // the newest CUDA the driver supports, "13.0"
  int64_t total_memory = 0;        // bytes
};

// Device memory one engine or context holds, in bytes.
struct DeviceMemoryReport {
  int64_t weights = 0;    // constant tensors uploaded once per engine (and kernels' packed copies)
  int64_t arena = 0;      // activations, from the static memory plan (per context)
  int64_t workspace = 0;  // library and kernel scratch (per context)
  int64_t io = 0;         // input/output device buffers (per context)
  int64_t total() const { return weights + arena + workspace + io; }
};

// An op the device cannot run, so it runs on the CPU with copies around it.
struct FallbackOp {
  std::string node;     // describe_node(): name, op type, index
  std::string reason;   // "no cuda kernel", "dtype int8 not supported", ...
  int64_t copy_bytes = -1;  // bytes copied between host and device per run at the largest shapes, -1 unknown
};

struct DeviceCreateOptions {
  std::string precision = "fp32";  // the engine's precision, for kernels that care (tf32)
  bool cuda_graph = true;          // capture one graph per input shape and replay it
  bool allow_tf32 = false;         // fp32 matrix products may use TF32 tensor cores
  // Per ValueId, the largest size in bytes over the engine's profiles (-1: unknown), or empty
  // when shapes are unbounded: then each context plans per shape and grows its arena.
  std::vector<int64_t> max_bytes;
  // What DeviceExecutor::tune chose when the engine was built (kept in the engine file), or null.
  nlohmann::json tuning;
};

// Timings of a context's last run, in milliseconds.
struct DeviceRunTimes {
  double compute_ms = 0;  // device time of the graph (its first to last node) or between events around the kernels; no copies
  double h2d_ms = 0;      // device time of the input copies
  double d2h_ms = 0;      // device time of the output copies
};

// What a GPU's clock controller did while runs were timed (ingot bench): the SM clock, the
// board's power, and the share of samples in which each reason held the clock below its
// maximum. At batch 32 a BERT-size model keeps an H100 at its 700 W limit the whole time
// (docs/PERFORMANCE.md, developer session 31): its times then follow the energy a run takes
// and the board's temperature, not the clock the GPU advertises.
struct DeviceClockReport {
  int samples = 0;
  double sm_mhz_median = 0, sm_mhz_min = 0;
  double sm_mhz_max = 0;  // the highest SM clock the GPU supports
  double power_w_median = 0, power_w_max = 0;
  double power_limit_w = 0;                              // the limit the board enforces
  double energy_j = -1;  // what the board drew over the whole span (its energy counter); -1 unknown
  std::vector<std::pair<std::string, double>> held_by;  // reason, share of samples in (0, 1]; largest first
};

// Samples a device's clocks on a thread of its own from its creation until stop().
class DeviceClockMonitor {
 public:
  virtual ~DeviceClockMonitor() = default;
  virtual DeviceClockReport stop() = 0;
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  // Host inputs in the graph's input order; host outputs in the graph's output order.
  virtual Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) = 0;
  virtual DeviceRunTimes last_run_times() const = 0;
  virtual DeviceMemoryReport memory() const = 0;  // this context's arena, workspace and io
};

class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;
  virtual Expected<std::unique_ptr<DeviceContext>> create_context() const = 0;
  virtual DeviceMemoryReport memory() const = 0;  // the engine's share: weights
  // Activation arena of the static plan (0 when shapes are unbounded).
  virtual int64_t arena_bytes() const = 0;
  // The static memory plan of the device's activations, or null when shapes are unbounded.
  virtual const MemoryPlan* memory_plan() const = 0;
  // Ops that run on the CPU, for the shapes planned so far.
  virtual std::vector<FallbackOp> fallback_ops() const = 0;
  // Plans the given input dtypes and shapes now (shape inference, placement, constants), so a
  // build reports fallbacks and errors before any run. Optional: runs plan on first use.
  virtual Status plan_shapes(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) const = 0;
  // Build-time tuning: one run of a fresh context on `inputs` (in the graph's input order) that
  // chooses what is too slow to choose at run time (cuda: the configurations of large matrix
  // products), returned merged with `previous` (an earlier tune()'s result, or null) to be
  // passed back as DeviceCreateOptions::tuning when the engine is loaded. Null: nothing to keep.
  virtual Expected<nlohmann::json> tune(const std::vector<Tensor>& inputs, const nlohmann::json& previous) const {
    (void)inputs;
    return previous;
  }
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // The device this process would use; an error when there is none (no GPU, no driver).
  virtual Expected<DeviceProperties> properties() const = 0;
  // Free device memory now, in bytes (tests check that engines give theirs back).
  virtual Expected<int64_t> free_memory() const = 0;
  virtual Expected<std::unique_ptr<DeviceExecutor>> create(const Graph& graph,
                                                           const std::map<std::string, int64_t>& opsets,
                                                           const DeviceCreateOptions& options) const = 0;
  // Starts sampling the device's clocks and power; an error when the device cannot report them.
  virtual Expected<std::unique_ptr<DeviceClockMonitor>> monitor_clocks() const {
    return unsupported("this device reports no clocks");
  }
};

// The backend registered under `name` ("cuda"), or null when this build has none.
const DeviceBackend* find_device_backend(const std::string& name);
bool register_device_backend(const std::string& name, std::unique_ptr<DeviceBackend> backend);

}  // namespace ingot
