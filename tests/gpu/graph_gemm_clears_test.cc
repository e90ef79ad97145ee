// release_gemm_clears (backends/cuda/cuda_graph_gemm_clears.h): in a captured graph, a clear of
// cuBLASLt's workspace at the head of a product's nodes waits for the product before instead of
// the node before, the product still waits for both, and nothing else moves.
#include <gtest/gtest.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_graph_gemm_clears.h"
#include "backends/cuda/lt_gemm.h"
#include "gpu_test_util.h"

namespace ingot::cuda {
namespace {

std::vector<cudaGraphNode_t> deps_of(cudaGraphNode_t n) {
  size_t k = 0;
  EXPECT_EQ(cudaGraphNodeGetDependencies(n, nullptr, nullptr, &k), cudaSuccess);
  std::vector<cudaGraphNode_t> d(k);
  if (k) {
    EXPECT_EQ(cudaGraphNodeGetDependencies(n, d.data(), nullptr, &k), cudaSuccess);
  }
  return d;
}

bool has(const std::vector<cudaGraphNode_t>& v, cudaGraphNode_t n) { return std::find(v.begin(), v.end(), n) != v.end(); }

// The graph `enqueue` makes on stream s, and the products' spans recorded while it captured.
template <class Enqueue>
void capture_logged(cudaStream_t s, Enqueue enqueue, cudaGraph_t& g, std::vector<GemmCaptureSpan>& spans) {
  const GemmCaptureLog log;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  enqueue();
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  spans = log.spans();
}

// A stand-in for one product as lt_gemm records it: the given clear (none when bytes is 0),
// then a copy in place of its kernel.
void fake_product(cudaStream_t s, uint8_t* clear, size_t clear_bytes, uint8_t* dst, const uint8_t* src, size_t n) {
  record_gemm_capture_begin(s);
  if (clear_bytes) {
    ASSERT_EQ(cudaMemsetAsync(clear, 0, clear_bytes, s), cudaSuccess);
  }
  ASSERT_EQ(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  record_gemm_capture_end(s);
}

// Two "products" (a workspace clear, then a copy standing in for the kernel), a fill of another
// buffer between them standing in for a LayerNorm and two before the first, captured from one
// stream.
TEST(GemmClears, ClearWaitsForThePreviousProductOnly) {
  INGOT_REQUIRE_GPU();
  constexpr size_t kWs = 4096, kN = 256;
  uint8_t *ws = nullptr, *src = nullptr, *dst0 = nullptr, *dst1 = nullptr, *other = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, kWs), cudaSuccess);
  for (uint8_t** p : {&src, &dst0, &dst1, &other}) ASSERT_EQ(cudaMalloc(p, kN), cudaSuccess);
  std::vector<uint8_t> host(kN);
  for (size_t i = 0; i < kN; ++i) host[i] = uint8_t(i * 7 + 3);
  ASSERT_EQ(cudaMemcpy(src, host.data(), kN, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(ws, 0xff, kWs), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);

  cudaGraph_t g = nullptr;
  std::vector<GemmCaptureSpan> spans;
  ASSERT_NO_FATAL_FAILURE(capture_logged(
      s,
      [&] {
        ASSERT_EQ(cudaMemsetAsync(other, 3, kN, s), cudaSuccess);  // the graph's first node
        ASSERT_EQ(cudaMemsetAsync(other, 1, kN, s), cudaSuccess);  // before the first product
        ASSERT_NO_FATAL_FAILURE(fake_product(s, ws, 4, dst0, src, kN));
        ASSERT_EQ(cudaMemsetAsync(other, 2, kN, s), cudaSuccess);  // between the products
        ASSERT_NO_FATAL_FAILURE(fake_product(s, ws + 256, 8, dst1, dst0, kN));
      },
      g, spans));
  ASSERT_EQ(spans.size(), 2u);
  ASSERT_EQ(spans[0].before.size(), 1u);
  const cudaGraphNode_t first_fill = spans[0].before[0], copy0 = spans[0].last;
  ASSERT_EQ(deps_of(first_fill).size(), 1u);
  const cudaGraphNode_t graph_start = deps_of(first_fill)[0];
  const cudaGraphNode_t between = spans[1].before[0], copy1 = spans[1].last;
  const cudaGraphNode_t clear0 = deps_of(copy0)[0], clear1 = deps_of(copy1)[0];

  EXPECT_EQ(release_gemm_clears(g, spans, ws, kWs), 2);
  // The first product's clear beside the node before it (a root, ready at the graph's start,
  // started late in BERT-base b32's traced replays); the second's after the first product.
  EXPECT_EQ(deps_of(clear0), std::vector<cudaGraphNode_t>{graph_start});
  EXPECT_EQ(deps_of(clear1), std::vector<cudaGraphNode_t>{copy0});
  const auto d0 = deps_of(copy0), d1 = deps_of(copy1);
  EXPECT_EQ(d0.size(), 2u);
  EXPECT_TRUE(has(d0, clear0) && has(d0, first_fill));
  EXPECT_EQ(d1.size(), 2u);
  EXPECT_TRUE(has(d1, clear1) && has(d1, between));

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<uint8_t> got(kN), w(kWs), o(kN);
  ASSERT_EQ(cudaMemcpy(got.data(), dst1, kN, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(w.data(), ws, kWs, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(o.data(), other, kN, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, host);
  for (size_t i = 0; i < kWs; ++i)
    ASSERT_EQ(int(w[i]), (i < 4 || (i >= 256 && i < 264)) ? 0 : 0xff) << "workspace byte " << i;
  EXPECT_EQ(o, std::vector<uint8_t>(kN, 2));

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  for (uint8_t* p : {ws, src, dst0, dst1, other}) cudaFree(p);
}

// A memset outside the workspace, or a product without a clear, is left where it is.
TEST(GemmClears, OtherMemsetsStay) {
  INGOT_REQUIRE_GPU();
  uint8_t *ws = nullptr, *buf = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, 1024), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&buf, 1024), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t g = nullptr;
  std::vector<GemmCaptureSpan> spans;
  ASSERT_NO_FATAL_FAILURE(capture_logged(
      s,
      [&] {
        ASSERT_EQ(cudaMemsetAsync(buf, 1, 16, s), cudaSuccess);
        ASSERT_NO_FATAL_FAILURE(fake_product(s, buf + 64, 4, buf + 128, buf, 16));  // not the workspace
        ASSERT_NO_FATAL_FAILURE(fake_product(s, nullptr, 0, buf + 256, buf, 16));
      },
      g, spans));
  size_t edges = 0;
  ASSERT_EQ(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges), cudaSuccess);
  EXPECT_EQ(release_gemm_clears(g, spans, ws, 1024), 0);
  size_t after = 0;
  ASSERT_EQ(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &after), cudaSuccess);
  EXPECT_EQ(after, edges);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFree(ws), cudaFree(buf);
}

// Outside capture, or without a log, nothing is recorded.
TEST(GemmClears, NothingRecordedOutsideCapture) {
  INGOT_REQUIRE_GPU();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const GemmCaptureLog log;
  record_gemm_capture_begin(s);
  record_gemm_capture_end(s);
  EXPECT_TRUE(log.spans().empty());
  cudaStreamDestroy(s);
}

// The real case: BERT-base's FFN 1 at batch 32 (4096 x 3072 x 768, bias and GELU), where cuBLASLt
// clears its workspace before a persistent kernel (H100). Six such products with a fill of
// another buffer between each two, in one graph with the clears released: the same bits as
// enqueued one by one, replay after replay.
TEST(GemmClears, ReleasedGraphComputesWhatTheStreamDoes) {
  INGOT_REQUIRE_GPU();
  constexpr int64_t M = 4096, K = 768, N = 3072;
  constexpr int kSteps = 6;
  const Tensor x = testing::random_of(DType::kFloat16, {M, K}, 81);
  const Tensor w = testing::random_of(DType::kFloat16, {K, N}, 82, -0.05, 0.05);
  const Tensor bias = testing::random_of(DType::kFloat16, {N}, 83, -0.1, 0.1);
  CudaHandles h;
  ASSERT_EQ(cudaStreamCreateWithFlags(&h.stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cublasLtCreate(&h.lt), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceGetAttribute(&h.sm_count, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  void *dx = nullptr, *dw = nullptr, *db = nullptr, *ws = nullptr, *between = nullptr;
  std::vector<void*> y(kSteps, nullptr);
  const size_t y_bytes = size_t(M * N) * 2;
  for (void*& p : y) ASSERT_EQ(cudaMalloc(&p, y_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dx, x.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, w.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, bias.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&between, 4096), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ws, kGemmWorkspaceBytes), cudaSuccess);
  h.gemm_workspace = ws, h.gemm_workspace_bytes = kGemmWorkspaceBytes;
  ASSERT_EQ(cudaMemcpy(dx, x.raw(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw, w.raw(), w.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, bias.raw(), bias.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  GemmDesc d;
  d.m = M, d.n = N, d.k = K, d.dtype = DType::kFloat16, d.bias = db, d.activation = GemmActivation::kGeluTanh;
  auto enqueue = [&] {
    for (int i = 0; i < kSteps; ++i) {
      ASSERT_TRUE(lt_gemm(h, d, dx, dw, y[size_t(i)]).is_ok());
      ASSERT_EQ(cudaMemsetAsync(between, i, 4096, h.stream), cudaSuccess);  // as a LayerNorm would be
    }
  };
  enqueue();  // the plan and its trials, outside capture
  ASSERT_EQ(cudaStreamSynchronize(h.stream), cudaSuccess);
  std::vector<std::vector<__half>> want(kSteps, std::vector<__half>(size_t(M * N)));
  for (int i = 0; i < kSteps; ++i)
    ASSERT_EQ(cudaMemcpy(want[size_t(i)].data(), y[size_t(i)], y_bytes, cudaMemcpyDeviceToHost), cudaSuccess);

  cudaGraph_t g = nullptr;
  std::vector<GemmCaptureSpan> spans;
  ASSERT_NO_FATAL_FAILURE(capture_logged(h.stream, enqueue, g, spans));
  EXPECT_EQ(spans.size(), size_t(kSteps));
  const int moved = release_gemm_clears(g, spans, ws, kGemmWorkspaceBytes);
  EXPECT_GE(moved, 0);
  std::printf("clears moved: %d of %d products\n", moved, kSteps);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  std::vector<__half> got(size_t(M * N));
  for (int r = 0; r < 3; ++r) {
    for (void* p : y) ASSERT_EQ(cudaMemsetAsync(p, 0xff, y_bytes, h.stream), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, h.stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(h.stream), cudaSuccess);
    for (int i = 0; i < kSteps; ++i) {
      ASSERT_EQ(cudaMemcpy(got.data(), y[size_t(i)], y_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(std::memcmp(got.data(), want[size_t(i)].data(), y_bytes), 0) << "replay " << r << ", product " << i;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  for (void* p : y) cudaFree(p);
  cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(between), cudaFree(ws);
  cublasLtDestroy(h.lt);
  cudaStreamDestroy(h.stream);
}

}  // namespace
}  // namespace ingot::cuda
