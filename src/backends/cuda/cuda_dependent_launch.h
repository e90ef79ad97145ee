// Programmatic dependent launch (compute capability 9.0): a kernel of ingot's own may be
// scheduled onto the GPU while the kernel before it in the stream (or CUDA graph) is still
// finishing, instead of after that kernel has ended and its writes have been flushed.
//
// In a CUDA graph every kernel boundary costs the launch of the next grid after the previous
// one's end; at batch 1 a transformer layer is seven kernels of 2-6 us each, so the boundaries
// are a large part of the run. A kernel launched through launch_dependent (dependent_launch.cuh)
// can start its CTAs early, do what needs no earlier result (loads of weights), then wait in
// wait_prior_grids() until every earlier kernel has ended and its memory is visible.
//
// What it buys depends on the kernel before: the overlap begins only when that kernel lets its
// dependents go (allow_dependent_grids, which ingot's kernels call right after their wait), or
// when its CTAs have all exited. cuBLASLt's kernels do neither early, so after a product the
// LayerNorm or attention kernel gains nothing, and with it on for ingot's own kernels BERT-base
// b1 ran 4-10 us slower and DistilBERT b1 0-4 us (H100, alternating A/B, developer session 18):
// off by default. The products themselves would have to be ingot's own to gain
// (gemm_split_k.h). Turning every edge of the captured graph programmatic, cuBLASLt's included,
// made BERT-base b1 60 us faster and its outputs wrong: cuBLASLt's kernels read their inputs
// without waiting.
//
// The rule that keeps this safe: a kernel launched through launch_dependent calls
// wait_prior_grids() in every CTA before its first access to memory that earlier work writes or
// reads (activations, outputs, the arena, counters): only constant data (weights, parameters)
// may be touched before it. Since each such kernel ends only after its own wait, waiting for the
// previous kernel covers everything before it. Kernels launched with <<<>>> (and library
// kernels such as cuBLASLt's) keep the ordinary full ordering.
//
// INGOT_CUDA_PDL=1 (read at each launch; a CUDA graph keeps what it captured) turns it on;
// otherwise launch_dependent launches in the ordinary way and wait_prior_grids returns at once.
#pragma once

namespace ingot::cuda {

// Whether launch_dependent asks for programmatic dependent launch: INGOT_CUDA_PDL=1.
bool dependent_launch_enabled();

}  // namespace ingot::cuda
