// Wide tuning of large products at build time (lt_gemm.h's WideTuneScope): the configurations
// cuBLASLt's heuristic does not offer, timed.
//
// For BERT-base's batch-32 products (4096 rows) the heuristic offers 8 configurations of one
// algorithm (Hopper's nvjet kernels, id 66), while that algorithm accepts some 7,300 (tile x
// cluster shape x custom option). Timed one by one (bench/lt_sweep.cc, H100, µs a launch, best
// the heuristic offers / best of all): QKV 4096x2304x768 26.36 / 23.17, out-projection
// 4096x768x768 12.08 / 11.81, FFN 1 4096x3072x768 33.79 / 33.62, FFN 2 4096x768x3072 31.39 /
// 30.75. Screening all of them costs 25-40 s a shape, nearly all of it loading each kernel's
// module on its first launch, so the search has two stages: every tile with every custom option
// (some 1,100 configurations, 3-5 s), then every cluster shape and option of the 8 fastest tiles.
// It finds the sweep's fastest for QKV (tile 406/407, cluster 2x1, option 1) and the
// out-projection; the engine then runs 1.7 % faster at BERT-base b32 (developer session 30).
// Only products of at least kWideTuneMinFlop are tuned wide.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace ingot::cuda {

// 2·m·n·k of the smallest product tuned wide: BERT-base's products from batch 3 (384 rows) up.
inline constexpr double kWideTuneMinFlop = 1e9;

// The product's descriptors as cuBLASLt checks a configuration against them (cuBLASLt's A, B,
// C and D: lt_gemm's plan), and the workspace a configuration may use.
struct LtProduct {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  size_t workspace = 0;
};

// For every tile size the algorithms among `heuristic` support (each algorithm id once, from its
// first candidate): that candidate's cluster shape with every custom option (at most 8) that
// cuBLASLt accepts with the tile for `p` within p.workspace, or where it accepts none, the first
// cluster shape and option it does; the candidate's stages, CTA swizzling, inner shape and K split.
std::vector<cublasLtMatmulAlgo_t> tile_variants(const LtProduct& p, const std::vector<cublasLtMatmulAlgo_t>& heuristic);

// `base` with every cluster shape (automatic, 1x1, 2x1, 1x2, 2x2, 4x1, 1x4) and custom option (at
// most 8) that cuBLASLt accepts for p, its tile and everything else kept.
std::vector<cublasLtMatmulAlgo_t> cluster_variants(const LtProduct& p, const cublasLtMatmulAlgo_t& base);

// Ranks `configs` by GPU time on `stream`, fastest first, at most `keep` of them: each launched
// once in each of two passes (back to back between CUDA events, behind a hold of the stream so
// the host's enqueueing is not timed; the faster launch counts), the fastest 16 then launched 20
// times each and ranked by their mean. The operands stay in L2 from one launch to the next, as a
// product's inputs are there in a model's graph, just written.
// `launch` enqueues the product with a configuration and says whether cuBLASLt took it. Empty
// when the events cannot be made or a hold cannot be enqueued.
std::vector<cublasLtMatmulAlgo_t> rank_configurations(
    cudaStream_t stream, const std::vector<cublasLtMatmulAlgo_t>& configs, size_t keep,
    const std::function<bool(const cublasLtMatmulAlgo_t&)>& launch);

// The two stages: the tile variants and the heuristic's candidates ranked, then the
// cluster variants of the 8 fastest with the heuristic's candidates; the `keep` fastest of those.
std::vector<cublasLtMatmulAlgo_t> wide_ranking(const LtProduct& p, const std::vector<cublasLtMatmulAlgo_t>& heuristic,
                                               cudaStream_t stream, size_t keep,
                                               const std::function<bool(const cublasLtMatmulAlgo_t&)>& launch);

// INGOT_CUDA_WIDE_TUNE=0 turns wide tuning off (an A/B switch).
bool wide_tuning_enabled();

}  // namespace ingot::cuda
