// Bulk and tensor copies global -> shared memory on the copy engine (sm_90), completing on an
// mbarrier: one thread asks for a whole piece or box, where 16-byte cp.async from every thread
// spends the CTA's issue slots (a CTA's 100-200 KB took twice cuBLASLt's whole product that way:
// gemm_split_k.cu; classifier_tail.cu).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ingot::cuda {

// An mbarrier of one arrival (the thread that posts the expected bytes).
__device__ __forceinline__ void mbar_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar) {  // phase 0: each barrier completes once
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar)
                 : "memory");
  } while (!done);
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from src into shared memory at dst,
// counted against the mbarrier's expected bytes.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// The box of a 2-D tensor map at column x, row y into shared memory at dst, counted against the
// mbarrier's expected bytes (the whole box: parts past the tensor read as zeros).
__device__ __forceinline__ void tensor_copy(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// The same box into shared memory at dst of every CTA of the cluster in cta_mask, completing on
// the mbarrier at the same offset in each (attention.cu: a head's K and V for all its query blocks).
__device__ __forceinline__ void tensor_copy_multicast(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(cta_mask)
      : "memory");
}

}  // namespace ingot::cuda
