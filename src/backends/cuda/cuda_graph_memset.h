// Memset nodes of a captured CUDA graph turned into kernel nodes.
//
// cuBLASLt clears a few bytes of its workspace before some of its kernels (BERT's FFN 1 at batch
// 32 on an H100: `nvjet_..._128x128_64x6_2x1_v_bz_gelubias`, a persistent kernel, clears 4 bytes
// before each launch). Captured, that clear becomes a memset node, and in the replayed graph a
// memset node costs far more than its work: traced (nsys, graph nodes, developer session 24),
// 0.74 us for the memset plus 0.9-1.3 us of gap before it and 3.2-3.3 us before the kernel after
// it, where boundaries between two kernels cost 0.0-0.3 us. A kernel node that writes the same
// bytes keeps the graph's nodes all kernels.
#pragma once

#include <cuda_runtime.h>

namespace ingot::cuda {

// Larger memsets are left as they are: there the node's fixed cost matters less than how fast
// it writes.
constexpr unsigned long long kMaxReplacedBytes = 64 << 10;

// Replaces every memset node of `graph` of at most kMaxReplacedBytes by a kernel node that writes the same values to the same
// memory, with the same dependencies and dependents. Returns the nodes replaced, or -1 when the
// graph was left inconsistent by a failure halfway (it must then be discarded).
int replace_memset_nodes(cudaGraph_t graph);

// INGOT_CUDA_GRAPH_MEMSET=keep leaves memset nodes as captured (for A/B timing).
bool memset_nodes_replaced();

}  // namespace ingot::cuda
