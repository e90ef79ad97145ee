// replace_memset_nodes (backends/cuda/cuda_graph_memset.h): a graph's memset nodes become kernel
// nodes that write the same bytes, in the same place in the graph.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "backends/cuda/cuda_graph_memset.h"
#include "gpu_test_util.h"

namespace ingot::cuda {
namespace {

int count_of(cudaGraph_t g, cudaGraphNodeType type) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  EXPECT_EQ(cudaGraphGetNodes(g, nodes.data(), &n), cudaSuccess);
  int c = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t{};
    EXPECT_EQ(cudaGraphNodeGetType(node, &t), cudaSuccess);
    c += t == type;
  }
  return c;
}

TEST(GraphMemset, KernelNodesWriteWhatTheMemsetsWrote) {
  INGOT_REQUIRE_GPU();
  // A pitched 2-D region (7 rows of 13 four-byte elements, 64-byte pitch), then byte and
  // two-byte fills over parts of it that the second and third nodes overwrite in order.
  constexpr size_t kPitch = 64, kRows = 7, kBytes = kPitch * kRows;
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, kBytes), cudaSuccess);
  std::vector<uint8_t> poison(kBytes);
  for (size_t i = 0; i < kBytes; ++i) poison[i] = uint8_t(std::rand());
  ASSERT_EQ(cudaMemcpy(buf, poison.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);

  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaMemsetParams a{buf, kPitch, 0xdeadbeefu, 4, 13, kRows};
  cudaMemsetParams b{static_cast<char*>(buf) + 3, 0, 0x5au, 1, 100, 1};
  cudaMemsetParams c{static_cast<char*>(buf) + 64, 0, 0x1234u, 2, 20, 1};
  cudaGraphNode_t na = nullptr, nb = nullptr, nc = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&na, g, nullptr, 0, &a), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemsetNode(&nb, g, &na, 1, &b), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemsetNode(&nc, g, &nb, 1, &c), cudaSuccess);

  EXPECT_EQ(replace_memset_nodes(g), 3);
  EXPECT_EQ(count_of(g, cudaGraphNodeTypeMemset), 0);
  EXPECT_EQ(count_of(g, cudaGraphNodeTypeKernel), 3);
  size_t edges = 0;
  ASSERT_EQ(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges), cudaSuccess);
  EXPECT_EQ(edges, 2u);  // still a chain: the fills' order is kept

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  std::vector<uint8_t> got(kBytes);
  ASSERT_EQ(cudaMemcpy(got.data(), buf, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);

  std::vector<uint8_t> want = poison;
  for (size_t r = 0; r < kRows; ++r)
    for (size_t e = 0; e < 13; ++e)
      for (size_t k = 0; k < 4; ++k) want[r * kPitch + 4 * e + k] = uint8_t(0xdeadbeefu >> (8 * k));
  for (size_t i = 0; i < 100; ++i) want[3 + i] = 0x5a;
  for (size_t e = 0; e < 20; ++e) want[64 + 2 * e] = 0x34, want[64 + 2 * e + 1] = 0x12;
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(int(got[i]), int(want[i])) << "byte " << i;

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaFree(buf);
}

TEST(GraphMemset, LargeMemsetsStayMemsets) {
  INGOT_REQUIRE_GPU();
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, kMaxReplacedBytes + 4), cudaSuccess);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaMemsetParams large{buf, 0, 0, 1, kMaxReplacedBytes + 1, 1};
  cudaMemsetParams small{buf, 0, 0, 4, kMaxReplacedBytes / 4, 1};
  cudaGraphNode_t nl = nullptr, ns = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&nl, g, nullptr, 0, &large), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemsetNode(&ns, g, &nl, 1, &small), cudaSuccess);
  EXPECT_EQ(replace_memset_nodes(g), 1);
  EXPECT_EQ(count_of(g, cudaGraphNodeTypeMemset), 1);
  EXPECT_EQ(count_of(g, cudaGraphNodeTypeKernel), 1);
  cudaGraphDestroy(g);
  cudaFree(buf);
}

TEST(GraphMemset, GraphWithoutMemsetsIsUnchanged) {
  INGOT_REQUIRE_GPU();
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t n = nullptr;
  ASSERT_EQ(cudaGraphAddEmptyNode(&n, g, nullptr, 0), cudaSuccess);
  EXPECT_EQ(replace_memset_nodes(g), 0);
  EXPECT_EQ(count_of(g, cudaGraphNodeTypeEmpty), 1);
  cudaGraphDestroy(g);
}

}  // namespace
}  // namespace ingot::cuda
