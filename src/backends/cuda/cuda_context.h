// The CUDA DeviceContext (see cuda_context.cc).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <set>
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
  DeviceBuffer arena_, workspace_, gemm_workspace_, grid_counter_, grid_scratch_;
  std::map<std::string, std::unique_ptr<Instance>> instances_;
  std::array<cudaEvent_t, 4> events_{};
  // Recorded by every captured graph as its first and last node, so that a replay's GPU compute
  // time is the graph's own. Events on the stream around cudaGraphLaunch also count the time the
  // GPU waits for the host to submit the graph after the input copies: within 1 us back to back,
  // but 5-8 us more after 10 ms idle (a host thread waking; H100, developer session 32: BERT-base
  // b1 0.3492 / 0.3554 and 0.3524 / 0.3589 ms, graph events / stream events, `bench --idle-time
  // 10`), which `ingot bench` would report as GPU time.
  std::array<cudaEvent_t, 2> graph_events_{};
  DeviceRunTimes times_;

  // INGOT_CUDA_PROFILE=1: kernels run one by one (no CUDA graph) between per-step events, and
  // the time per op type is printed when the context is destroyed (trtexec's --dumpProfile).
  struct OpTime {
    double ms = 0;
    int64_t launches = 0;
  };
  bool profiling_ = false;
  std::set<std::string> repeat_ops_;  // INGOT_CUDA_REPEAT_OPS (a timing aid, cuda_context.cc)
  double profile_enqueue_ms_ = 1.0;  // host time of the last run's enqueue: sizes the profile's stream hold
  std::vector<cudaEvent_t> step_events_;
  std::map<std::string, OpTime> profile_;
  int64_t profiled_runs_ = 0;
  void print_profile() const;
};

}  // namespace ingot::cuda
