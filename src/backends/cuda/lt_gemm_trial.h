// Timing GEMM candidates on the GPU alone. A small product runs in a few microseconds, about what
// the host needs to enqueue one (cublasLtMatmul's own host work included), so timing a burst of
// launches measures the host unless the GPU is kept busy while the burst is enqueued: the hold
// kernel spins on the stream first, and the events around the burst then see only GPU time.
#pragma once

#include <cuda_runtime.h>

namespace ingot::cuda {

// Enqueues a one-thread kernel that spins for about `microseconds`.
cudaError_t launch_stream_hold(cudaStream_t stream, int microseconds);

}  // namespace ingot::cuda
