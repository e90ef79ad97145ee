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
// What it buys depends on the kernel before: launched into a stream, the overlap begins only when
// that kernel lets its dependents go (allow_dependent_grids, which ingot's kernels call right
// after their wait), or when its CTAs have all exited. cuBLASLt's kernels do neither early, so
// after a product the LayerNorm or attention kernel gained nothing that way (developer session
// 18). In a captured CUDA graph, trigger_dependents_at_launch below moves each such edge to the
// kernel before's launch completion (all its CTAs have started): the next kernel's CTAs are then
// resident and waiting when the product ends. With that, on an H200 (developer session 20,
// alternating A/B, off / on): DistilBERT b1 0.2009 / 0.1942 and 0.2017 / 0.1955 ms, BERT-base b1
// 0.4117 / 0.3878 and 0.4113 / 0.3886, but DistilBERT b32 0.7018 / 0.7110 and 0.6995 / 0.7448,
// BERT-base b32 1.4762 / 1.5440 and 1.4839 / 1.4905. Hence the default, auto: on in the
// graphs of small shapes. H100 (session 21, off / auto, three rounds): DistilBERT b1 0.2035 /
// 0.1933, 0.1995 / 0.1946, 0.2015 / 0.1941; BERT-base b1 0.3933 / 0.3834, 0.3975 / 0.4151,
// 0.3944 / 0.3838; DistilGPT2 b1 0.2717 / 0.2663, 0.2722 / 0.2711, 0.2716 / 0.2658; batch 32 of
// the BERT family is left as it was (within the rounds' spread). "1" at b32 on an H100 (session
// 23, auto / 1): DistilBERT 0.7043 / 0.7261, 0.7038 / 0.7274, 0.7073 / 0.7614; BERT-base
// 1.4863 / 1.5130, 1.4879 / 1.5162, 1.4875 / 1.5184; DistilGPT2 and ResNet-50 within the spread;
// the LayerNorms alone launched so at b32 were slower too (DistilBERT 0.7103 / 0.7270, 0.7158 /
// 0.7179, 0.7137 / 0.7211, 0.7188 / 0.7310). Turning every edge of the
// captured graph programmatic, cuBLASLt's included, made BERT-base b1 60 us faster and its
// outputs wrong: cuBLASLt's kernels read their inputs without waiting.
//
// The rule that keeps this safe: a kernel launched through launch_dependent calls
// wait_prior_grids() in every CTA before its first access to memory that earlier work writes or
// reads (activations, outputs, the arena, counters): only constant data (weights, parameters)
// may be touched before it. Since each such kernel ends only after its own wait, waiting for the
// previous kernel covers everything before it. Kernels launched with <<<>>> (and library
// kernels such as cuBLASLt's) keep the ordinary full ordering.
//
// INGOT_CUDA_PDL (read at each launch; a CUDA graph keeps what it captured): unset or "auto"
// (the default) turns it on for the CUDA graphs of small shapes (those whose largest activation
// is at most kSmallGraphActivationBytes: batch 1 gained, batch 32 did not) and, in the graphs of
// larger shapes, for the steps whose outputs are at most kSmallStepOutputBytes (a classifier's
// last layer after gather_rows_early at batch 32: one row a sequence); "1" for every launch;
// "0" never. Where it is off, launch_dependent launches in the ordinary way and
// wait_prior_grids returns at once; outside a captured graph auto is off.
#pragma once

#include <cuda_runtime.h>

namespace ingot::cuda {

enum class DependentLaunchMode { kOff, kOn, kAuto };

// INGOT_CUDA_PDL: "0" off, "1" on, anything else (or unset) auto: on in small graphs.
DependentLaunchMode dependent_launch_mode();

// Whether launch_dependent asks for programmatic dependent launch now: mode on, or auto inside a
// DependentLaunchScope that chose it on this thread.
bool dependent_launch_enabled();

// The auto mode's rule: BERT-base b1's largest activation is 0.75 MB (gains), b32's 24 MB (no
// gain); ResNet-50 b1's 1.6 MB.
constexpr long long kSmallGraphActivationBytes = 4ll << 20;
bool dependent_launch_pays(long long largest_activation_bytes);

// The auto mode's rule for a step of a graph too large for the rule above: its outputs are at
// most kSmallStepOutputBytes. H100, developer session 24, alternating A/B at batch 32 (GPU
// compute median of 300 runs, ms, without / with): DistilBERT 0.7070 / 0.7051, 0.7095 / 0.7061,
// 0.7128 / 0.7031; BERT-base 1.4998 / 1.4865, 1.4877 / 1.4869, 1.4957 / 1.4949; DistilGPT2 and
// ResNet-50 within their spread (1.818-1.829, 1.126-1.133).
constexpr long long kSmallStepOutputBytes = 1ll << 20;
bool step_dependent_launch_pays(long long largest_output_bytes);

// In auto mode, the launches on this thread while it lives use dependent launch iff `on`.
class DependentLaunchScope {
 public:
  explicit DependentLaunchScope(bool on);
  ~DependentLaunchScope();
  DependentLaunchScope(const DependentLaunchScope&) = delete;
  DependentLaunchScope& operator=(const DependentLaunchScope&) = delete;

 private:
  int saved_;
};

// Makes every programmatic edge of a captured graph trigger when the kernel before has launched
// all its CTAs instead of when it lets its dependents go: the dependent waits in
// wait_prior_grids() all the same (the edge stays programmatic). Returns the edges changed, or
// -1 when an edge could be neither changed nor restored (the graph must then be discarded).
int trigger_dependents_at_launch(cudaGraph_t graph);

}  // namespace ingot::cuda
