// replace_memset_nodes (cuda_graph_memset.h).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_graph_memset.h"

namespace ingot::cuda {
namespace {

// What a memset node writes: `height` rows of `width` elements of `element_size` bytes, rows
// `pitch` bytes apart.
struct FillParams {
  void* dst;
  unsigned long long pitch, width, height;
  unsigned value, element_size;
};

__global__ void fill_kernel(const FillParams f) {
  const unsigned long long n = f.width * f.height;
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull) {
    const unsigned long long row = i / f.width, col = i - row * f.width;
    char* p = static_cast<char*>(f.dst) + row * f.pitch + col * f.element_size;
    switch (f.element_size) {
      case 1: *reinterpret_cast<unsigned char*>(p) = static_cast<unsigned char>(f.value); break;
      case 2: *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(f.value); break;
      default: *reinterpret_cast<unsigned*>(p) = f.value; break;
    }
  }
}

// The kernel node that does what memset node `node` does, in its place; false when any step
// failed (then `graph` may have lost the memset node's edges).
bool replace(cudaGraph_t graph, cudaGraphNode_t node, bool& broken) {
  cudaMemsetParams m{};
  if (cudaGraphMemsetNodeGetParams(node, &m) != cudaSuccess) return false;
  if (m.elementSize != 1 && m.elementSize != 2 && m.elementSize != 4) return false;
  if (m.width * m.height * m.elementSize > kMaxReplacedBytes) return false;
  size_t n_deps = 0, n_next = 0;
  if (cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n_deps) != cudaSuccess ||
      cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &n_next) != cudaSuccess)
    return false;
  std::vector<cudaGraphNode_t> deps(n_deps), next(n_next);
  std::vector<cudaGraphEdgeData> deps_data(n_deps), next_data(n_next);
  if ((n_deps && cudaGraphNodeGetDependencies(node, deps.data(), deps_data.data(), &n_deps) != cudaSuccess) ||
      (n_next && cudaGraphNodeGetDependentNodes(node, next.data(), next_data.data(), &n_next) != cudaSuccess))
    return false;

  FillParams f{m.dst, m.height > 1 ? m.pitch : m.width * m.elementSize, m.width, m.height, m.value, m.elementSize};
  const unsigned long long count = f.width * f.height;
  const unsigned blocks = unsigned(count / 256 + 1 < 1024 ? count / 256 + 1 : 1024);
  void* args[] = {&f};
  cudaKernelNodeParams k{};
  k.func = reinterpret_cast<void*>(fill_kernel);
  k.gridDim = dim3(blocks);
  k.blockDim = dim3(256);
  k.kernelParams = args;
  cudaGraphNode_t fill = nullptr;
  if (cudaGraphAddKernelNode(&fill, graph, nullptr, 0, &k) != cudaSuccess) return false;
  // From here on a failure leaves the graph without a node it needs.
  for (size_t i = 0; i < n_deps; ++i)
    if (cudaGraphAddDependencies(graph, &deps[i], &fill, &deps_data[i], 1) != cudaSuccess) broken = true;
  for (size_t i = 0; i < n_next; ++i)
    if (cudaGraphAddDependencies(graph, &fill, &next[i], &next_data[i], 1) != cudaSuccess) broken = true;
  if (!broken && cudaGraphDestroyNode(node) != cudaSuccess) broken = true;
  return !broken;
}

}  // namespace

bool memset_nodes_replaced() {
  const char* e = std::getenv("INGOT_CUDA_GRAPH_MEMSET");
  return !(e && std::strcmp(e, "keep") == 0);
}

int replace_memset_nodes(cudaGraph_t graph) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess || n == 0) return 0;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return 0;
  int replaced = 0;
  bool broken = false;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess || type != cudaGraphNodeTypeMemset) continue;
    if (replace(graph, node, broken)) ++replaced;
    if (broken) break;
  }
  cudaGetLastError();
  return broken ? -1 : replaced;
}

}  // namespace ingot::cuda
