// Bulk and tensor copies global -> shared memory on the copy engine (sm_90), completing on an
// mbarrier: one thread asks for a whole piece or box, where 16-byte cp.async from every thread
// spends the CTA's issue slots (a CTA's 100-200 KB took twice cuBLASLt's whole product that way:
// gemm_split_k.cu; classifier_tail.cu).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ingot::cuda {

// An mbarrier of `count` arrivals a phase (1: the thread that posts the expected bytes).
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count = 1) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Until the barrier's phase of this parity has completed (a pipeline's stage barriers complete
// once a round: round r waits for parity r & 1).
__device__ __forceinline__ void mbar_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_wait(uint32_t bar) { mbar_wait_parity(bar, 0); }  // barriers that complete once
// One arrival, release at CTA scope (a consumer handing a stage back to the producer).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
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

// L2 eviction policies for tensor_copy_hint (createpolicy): data read once (evict first) and
// data every CTA reads again (evict last).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_evict_last_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// tensor_copy with an L2 eviction policy.
__device__ __forceinline__ void tensor_copy_hint(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar,
                                                 uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "l"(policy)
      : "memory");
}

// The box at shared address src into the tensor at column x, row y (parts past the tensor are not
// written), in the thread's current bulk group. Ordinary stores into src must be made visible to
// the copy engine first (fence.proxy.async.shared::cta, then a barrier of the writers).
__device__ __forceinline__ void tensor_store(const CUtensorMap* map, int x, int y, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until every committed store has read its shared memory source (which may then be written).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }

}  // namespace ingot::cuda
