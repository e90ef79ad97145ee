// ingot.FeedForward's one-kernel path (feed_forward_block.cu): a post-LN layer's feed-forward
// block on at most kFeedForwardMaxRows rows (a transformer's batch 1: 128 tokens) in float16 or
// bfloat16, the kernel feed_forward.cc launches where it fits.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "backends/cuda/gemm_impl.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

constexpr int64_t kFeedForwardMaxRows = 128;

struct FeedForwardLaunch {
  DType dtype = DType::kFloat16;
  const void *x = nullptr, *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;  // biases may be null
  const void *gamma = nullptr, *beta = nullptr;                                       // beta may be null
  void* y = nullptr;
  int64_t rows = 0, K = 0, N = 0;
  float epsilon = 1e-5f;
  bool has_act = false;
  PointwiseActivation act = PointwiseActivation::kRelu;
  void* scratch = nullptr;     // feed_forward_block_scratch_bytes(), 256-byte aligned
  unsigned* counter = nullptr;  // the context's grid counter (zero, and zero again after)
  int sm_count = 0;
  L2Prefetch prefetch;  // the next steps' weights, requested once the block's own are in
};

// Whether the one kernel takes these sizes on a device with sm_count multiprocessors.
bool feed_forward_block_fits(DType dtype, int64_t rows, int64_t K, int64_t N, int sm_count);
size_t feed_forward_block_scratch_bytes(int64_t rows, int64_t K, int64_t N);
cudaError_t launch_feed_forward_block(const FeedForwardLaunch& a, cudaStream_t stream);

}  // namespace ingot::cuda
