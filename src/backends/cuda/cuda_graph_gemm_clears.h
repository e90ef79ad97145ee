// cuBLASLt's clears of its workspace taken off a captured graph's chain.
//
// Before some of its kernels cuBLASLt clears a few bytes of its workspace (a persistent kernel's
// tile counter: BERT's FFN 1 at batch 32 on an H100). Captured from one stream, that clear is a
// node between the kernel before the product (a LayerNorm) and the product, and costs a kernel
// boundary of its own on the chain (~1 us a layer, traced, developer session 27). The workspace
// is cuBLASLt's alone (CudaHandles::gemm_workspace): only the products write it, so the clear
// need only wait for the product before it. release_gemm_clears moves it there: it then runs
// beside whatever lies between the two products, and the product after it waits for both.
#pragma once

#include <cuda_runtime.h>

#include <vector>

namespace ingot::cuda {

// The nodes one cublasLtMatmul added to a stream capture: the capture's dependencies before
// it, and the last node it added.
struct GemmCaptureSpan {
  std::vector<cudaGraphNode_t> before;
  cudaGraphNode_t last = nullptr;
};

// While one lives, the products lt_gemm enqueues on a capturing stream from this thread are
// recorded in order (record_gemm_capture_begin/end, called by lt_gemm).
class GemmCaptureLog {
 public:
  GemmCaptureLog();
  ~GemmCaptureLog();
  GemmCaptureLog(const GemmCaptureLog&) = delete;
  GemmCaptureLog& operator=(const GemmCaptureLog&) = delete;
  const std::vector<GemmCaptureSpan>& spans() const { return spans_; }

 private:
  friend void record_gemm_capture_begin(cudaStream_t stream);
  friend void record_gemm_capture_end(cudaStream_t stream);
  GemmCaptureLog* saved_;
  std::vector<GemmCaptureSpan> spans_;
  bool open_ = false;
};

// Around one cublasLtMatmul: no-ops without a GemmCaptureLog on this thread or when `stream`
// is not capturing.
void record_gemm_capture_begin(cudaStream_t stream);
void record_gemm_capture_end(cudaStream_t stream);

// For each span whose first nodes are memsets into [workspace, workspace + bytes): each such
// memset depends on the previous span's last node instead (for the first span, the node its one
// `before` node depends on; none when there is no such single node), and what depended on it
// also depends on the span's `before` nodes. Returns the memsets moved, or -1 when
// a failure left the graph inconsistent (it must then be discarded).
int release_gemm_clears(cudaGraph_t graph, const std::vector<GemmCaptureSpan>& spans, const void* workspace,
                        size_t bytes);

// INGOT_CUDA_GEMM_CLEARS=chain keeps the clears where capture put them (for A/B timing); =root
// makes the first a root node, as before developer session 39.
bool gemm_clears_released();

}  // namespace ingot::cuda
