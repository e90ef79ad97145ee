// A barrier across the whole grid for kernels whose CTAs are all resident at once (a cooperative
// launch of at most one CTA per multiprocessor: classifier_tail.cu).
#pragma once

namespace ingot::cuda {

// The grid's next barrier on `counter` (the context's grid counter, zero at the kernel's start):
// `arrivals` (this CTA's count of the arrivals so far, all CTAs' together) grows by the grid's
// size, and every CTA waits until the counter reaches it. Thread 0's fence after the CTA's
// barrier makes the CTA's writes visible to every CTA past the grid barrier (readers use __ldcg
// or cp.async.cg: L1 is not coherent), as cooperative groups' grid sync does.
__device__ __forceinline__ void grid_barrier(unsigned* counter, unsigned& arrivals) {
  arrivals += gridDim.x;
  const unsigned target = arrivals;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1u);
    unsigned seen;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

}  // namespace ingot::cuda
