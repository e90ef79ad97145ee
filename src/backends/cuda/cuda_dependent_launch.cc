// dependent_launch_enabled and trigger_dependents_at_launch (cuda_dependent_launch.h).
#include "backends/cuda/cuda_dependent_launch.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace ingot::cuda {

namespace {
thread_local int scope_choice = -1;  // auto mode: -1 no scope, 0 off, 1 on
}  // namespace

// Read at every launch (a getenv beside a launch's microseconds), so that a test can compare
// the ways in one process.
DependentLaunchMode dependent_launch_mode() {
  const char* e = std::getenv("INGOT_CUDA_PDL");
  if (e && std::strcmp(e, "0") == 0) return DependentLaunchMode::kOff;
  if (e && std::strcmp(e, "1") == 0) return DependentLaunchMode::kOn;
  return DependentLaunchMode::kAuto;
}

bool dependent_launch_enabled() {
  switch (dependent_launch_mode()) {
    case DependentLaunchMode::kOn: return true;
    case DependentLaunchMode::kAuto: return scope_choice == 1;
    case DependentLaunchMode::kOff: return false;
  }
  return false;
}

bool dependent_launch_pays(long long largest_activation_bytes) {
  return largest_activation_bytes <= kSmallGraphActivationBytes;
}

bool step_dependent_launch_pays(long long largest_output_bytes) {
  return largest_output_bytes <= kSmallStepOutputBytes;
}

DependentLaunchScope::DependentLaunchScope(bool on) : saved_(scope_choice) { scope_choice = on ? 1 : 0; }
DependentLaunchScope::~DependentLaunchScope() { scope_choice = saved_; }

int trigger_dependents_at_launch(cudaGraph_t graph) {
  size_t n = 0;
  if (cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n) != cudaSuccess || n == 0) return 0;
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  if (cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &n) != cudaSuccess) return 0;
  int changed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (data[i].type != cudaGraphDependencyTypeProgrammatic || data[i].from_port != cudaGraphKernelNodePortProgrammatic)
      continue;
    cudaGraphEdgeData early = data[i];
    early.from_port = cudaGraphKernelNodePortLaunchCompletion;
    if (cudaGraphRemoveDependencies(graph, &from[i], &to[i], &data[i], 1) != cudaSuccess) continue;
    if (cudaGraphAddDependencies(graph, &from[i], &to[i], &early, 1) == cudaSuccess) {
      ++changed;
    } else if (cudaGraphAddDependencies(graph, &from[i], &to[i], &data[i], 1) != cudaSuccess) {
      cudaGetLastError();
      return -1;  // the edge is gone: the graph must not be used
    }
  }
  cudaGetLastError();
  return changed;
}

}  // namespace ingot::cuda
