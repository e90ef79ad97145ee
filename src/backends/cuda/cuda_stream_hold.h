// Holding a stream on the GPU while the host enqueues work behind it, so that CUDA events around
// that work time the GPU alone. Small kernels run in a few microseconds, about what the host needs
// to enqueue one (cuBLASLt's and cuDNN's host work included), so events around work enqueued
// as it runs time the host. Used to time GEMM candidates (lt_gemm.cc) and for the per-op
// profile (INGOT_CUDA_PROFILE=1, cuda_context.cc).
#pragma once

#include <cuda_runtime.h>

namespace ingot::cuda {

// Enqueues a one-thread kernel that spins for about `microseconds`.
cudaError_t launch_stream_hold(cudaStream_t stream, int microseconds);

}  // namespace ingot::cuda
