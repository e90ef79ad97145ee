// The CUDA DeviceContext (see cuda_context.cc).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/lt_gemm.h"

namespace ingot::cuda {

class CudaContext final : public DeviceContext {
 public:
  static Expected<std::unique_ptr<CudaContext>> create(const CudaExecutor& ex);
  ~CudaContext() override;

  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) override;
  DeviceRunTimes last_run_times() const override { return times_; }
  DeviceMemoryReport memory() const override;

 private:
  struct Instance;
  explicit CudaContext(const CudaExecutor& ex);
  Status reserve(int64_t arena, size_t workspace);
  Expected<Instance*> instance(const std::shared_ptr<const ShapePlan>& plan);
  // step_pdl (while capturing a large graph in auto mode): per step, whether it takes dependent launch.
  Status enqueue(Instance& inst, const std::vector<char>* step_pdl = nullptr);
  void capture(Instance& inst);
  cudaGraphExec_t capture_graph(Instance& inst, std::string& error);
  void tune_products(Instance& inst, const std::vector<GemmPlan*>& products);
  double replay_ms(cudaGraphExec_t exec);
  static int64_t largest_activation(const Instance& inst);
  static constexpr int kTuneReplays = 10, kTuneRounds = 3;
  static constexpr double kTuneMargin = 0.003;

  const CudaExecutor& ex_;
  CudaHandles handles_;
  DeviceBuffer arena_, workspace_, gemm_workspace_, grid_counter_;
  std::map<std::string, std::unique_ptr<Instance>> instances_;
  std::array<cudaEvent_t, 4> events_{};
  DeviceRunTimes times_;

  // INGOT_CUDA_PROFILE=1: kernels run one by one (no CUDA graph) between per-step events, and
  // the time per op type is printed when the context is destroyed (trtexec's --dumpProfile).
  struct OpTime {
    double ms = 0;
    int64_t launches = 0;
  };
  bool profiling_ = false;
  double profile_enqueue_ms_ = 1.0;  // host time of the last run's enqueue: sizes the profile's stream hold
  std::vector<cudaEvent_t> step_events_;
  std::map<std::string, OpTime> profile_;
  int64_t profiled_runs_ = 0;
  void print_profile() const;
};

}  // namespace ingot::cuda
