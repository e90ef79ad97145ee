// launch_stream_hold (cuda_stream_hold.h).
#include <cstdint>

#include "backends/cuda/cuda_stream_hold.h"

namespace ingot::cuda {
namespace {

__global__ void hold_kernel(uint64_t ns) {
  uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

cudaError_t launch_stream_hold(cudaStream_t stream, int microseconds) {
  hold_kernel<<<1, 1, 0, stream>>>(uint64_t(microseconds) * 1000);
  return cudaGetLastError();
}

}  // namespace ingot::cuda
