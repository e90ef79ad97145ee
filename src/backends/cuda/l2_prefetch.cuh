// Device side of L2Prefetch (cuda_l2_prefetch.h): a kernel that takes one calls
// issue_l2_prefetch() from every thread, once its own first loads are out.
#pragma once

#include "backends/cuda/cuda_l2_prefetch.h"

namespace ingot::cuda {

// The launch's CTAs split the ranges' bytes evenly, in order, and the first thread of each
// issues its share as one cp.async.bulk.prefetch.L2 per range it touches (sm_90 and later; a
// hint, so older devices skip it). It returns at once; the copies into L2 go on after the kernel
// ends. One instruction per range, not many small pieces: 32 KB pieces dealt out in turn (so
// that every SM would ask for the first bytes first) made DistilBERT b1 35 us slower on an H100.
__device__ __forceinline__ void issue_l2_prefetch(const L2Prefetch& p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (p.count == 0 || threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;
  // 32-bit arithmetic (a 64-bit division is a long call): at most 4 ranges of < 2^31 bytes.
  const uint32_t ctas = gridDim.x * gridDim.y * gridDim.z;
  const uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  uint32_t units = 0;  // 16-byte units in all
  for (int i = 0; i < p.count; ++i) units += p.bytes[i] >> 4;
  const uint32_t per = (units + ctas - 1) / ctas, lo = cta * per, hi = min(lo + per, units);
  uint32_t start = 0;
  for (int i = 0; i < p.count && start < hi; ++i) {
    const uint32_t n = p.bytes[i] >> 4, a = max(lo, start), b = min(hi, start + n);
    if (a < b) {
      const char* src = static_cast<const char*>(p.ptr[i]) + size_t(a - start) * 16;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"((b - a) * 16) : "memory");
    }
    start += n;
  }
#else
  (void)p;
#endif
}

}  // namespace ingot::cuda
