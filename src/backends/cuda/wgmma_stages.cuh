// A consumer warpgroup's side of a copy pipeline feeding wgmma (sm_90a only, as wgmma.cuh): the
// kernels whose one copying thread fills a ring of stages, each an A box of the tile's rows and
// W's N / 64 MN-major [64 x 64] boxes of one K step of 64, and whose product warpgroups take
// them in turn (attention_projected.cu, product_norm.cu).
#pragma once

#include <cstdint>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/wgmma.cuh"

namespace ingot::cuda {

// KT K steps into acc (its first product overwrites it): wait for stage it % kStages to fill,
// multiply this warpgroup's 64 rows of its A box (a_stages: the ring's first A box at this
// warpgroup's rows) by its W boxes, and once those products are done hand the stage before back
// (one arrival on its empty barrier, from `releaser`). `it` counts stages across calls: a
// persistent CTA's tiles share the ring. The last stage stays taken; a caller with more tiles
// after this one hands it back after wgmma_wait<0>, as this returns.
template <class T, int N, int kStages>
__device__ __forceinline__ void wgmma_k_steps(float (&acc)[N / 2], int KT, int& it, uint32_t a_stages,
                                              uint32_t a_stage_bytes, uint32_t w_stages, uint32_t w_stage_bytes,
                                              uint32_t box_bytes, uint64_t* full, uint64_t* empty, bool releaser) {
  for (int kt = 0; kt < KT; ++kt, ++it) {
    const int s = it % kStages;
    mbar_wait_parity(smem_addr(&full[s]), (it / kStages) & 1);
    wgmma_fence();
    wgmma_k64<T, N, true>(acc, a_stages + s * a_stage_bytes, w_stages + s * w_stage_bytes, box_bytes, kt > 0);
    wgmma_commit();
    wgmma_wait<1>();  // the previous stage's products are done: hand it back
    if (kt > 0 && releaser) mbar_arrive(smem_addr(&empty[(it - 1) % kStages]));
  }
  wgmma_wait<0>();
}

}  // namespace ingot::cuda
