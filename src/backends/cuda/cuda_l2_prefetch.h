// Weights of a plan's next steps, requested into L2 by a kernel of ingot's own that runs before
// them (the attention core, the LayerNorms, the embedding).
//
// At batch 1 a transformer layer's products read their weights once, straight from HBM, and are
// latency-bound on it: a graph of BERT-base's 48 batch-1 products took 254 us with each layer's
// own weights and 215 us when they all shared one L2-resident layer (developer session 11). The
// kernels between the products have no use for HBM, so each asks for the weights of the next
// product (CudaExecutor::plan_prefetch) with cp.async.bulk.prefetch.L2 (fire and forget: no
// result, no wait, nothing for the kernel to hold). Prefetching from a branch of the graph
// instead broke the graph's single chain of kernels and cost more than it saved (session 14).
//
// H100, alternating A/B (bench/gpu_ab.sh INGOT_CUDA_L2_PREFETCH=0, developer session 17):
// BERT-base b1 3-6 us and DistilBERT b1 1-3 us a run faster, far from the 40 us the products
// lose to cold weights: a kernel between two products runs for 2-5 us, too short a head start.
// Asking for more was slower: the weights up to the second next such kernel by 3-11 us (the next
// product then shares HBM with the prefetch), the product after the next by 1-2 us; so was
// asking from every thread by 128-byte line (50-70 us). Where the steps move many activation
// bytes (b32) prefetching is left out. Nor did a lookahead pay (session 23, H100, three rounds):
// each such kernel asking for the weights read after it up to 4 / 8 / 12 / 20 MB beyond what
// had been read, continuing where the kernel before stopped (every product's weights asked for
// ahead): BERT-base b1 0.380-0.386 ms without, 0.385-0.392 / 0.385-0.402 / 0.391-0.402 /
// 0.397-0.400 with; DistilBERT b1 0.193-0.197 without, 0.191-0.193 at 4 MB, slower beyond;
// DistilGPT2 b1 slower from 8 MB; ResNet-50 b1 unchanged. Issued after the LayerNorms' and the
// embedding's first loads instead of before them: no difference (session 26).
//
// Nor did keeping activations in L2 at b32 (session 31, an experiment since removed): BERT-base's
// FFN intermediate (25 MB, one arena offset for all 12 layers) is written to DRAM by FFN 1 and
// read back by FFN 2 (~36 MB a layer, Nsight Compute); an access policy window marking it
// persisting in every kernel node of the graph, with 31 MB of L2 set aside, made BERT-base b32
// 1.69-1.70 ms against 1.42 (DistilBERT 0.79-0.80 against 0.65-0.66), the rest of the traffic
// squeezed into what was left; with 16 MB set aside (hit ratio 0.67) it was unchanged. Nor did
// dropping dead activations from L2 (session 31, discard.global.L2 by the LayerNorms on the
// lines of their input once read, so they are never written back): BERT-base b32 unchanged.
//
// INGOT_CUDA_L2_PREFETCH=0 (when a plan is made) turns it off: an A/B switch.
#pragma once

#include <cstdint>
#include <vector>

namespace ingot::cuda {

// What one kernel launch prefetches: at most kMaxRanges byte ranges of device memory, each
// 16-byte aligned and a multiple of 16 bytes long (cp.async.bulk's unit), shared out among the
// launch's CTAs in order (issue_l2_prefetch, l2_prefetch.cuh). count 0: nothing.
struct L2Prefetch {
  static constexpr int kMaxRanges = 4;
  const void* ptr[kMaxRanges] = {};
  uint32_t bytes[kMaxRanges] = {};
  int count = 0;
};

// Bytes [offset, offset + bytes) of one buffer.
struct ByteRange {
  int64_t offset = 0, bytes = 0;
  bool operator==(const ByteRange& o) const { return offset == o.offset && bytes == o.bytes; }
};

// The ranges one launch prefetches, from the weight ranges of the steps that follow it (offsets
// 16-byte aligned, as the weights buffer carves them): sorted by offset (the weights are laid
// out in node order, so the first needed come first), merged where they overlap or touch, then
// merged across the smallest gaps until at most L2Prefetch::kMaxRanges remain (a gap prefetched
// costs a little bandwidth, never a wrong result), each rounded up to 16 bytes, and cut after
// `budget` bytes in all. Empty ranges are dropped.
std::vector<ByteRange> prefetch_ranges(std::vector<ByteRange> ranges, int64_t budget);

// Whether plans prefetch: INGOT_CUDA_L2_PREFETCH unset or not "0".
bool l2_prefetch_enabled();

}  // namespace ingot::cuda
