// The launcher of ingot.ClassifierHead's one-kernel path (device code in classifier_head.cu),
// for classifier_head.cc. Pointers are device memory; the launcher enqueues on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/gemm_impl.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

// Y[r] = act(LayerNorm(X[r]) · W1 + b1) · W2 + b2 for r < rows (classifier_head.cc says more).
struct HeadLaunch {
  DType dtype = DType::kFloat32;  // of every input, and of Y unless float_output
  const void* x = nullptr;        // [rows, K]
  const void* gamma = nullptr;    // [K]
  const void* beta = nullptr;     // [K] or null
  const void* w1 = nullptr;       // [K, N1], 16-byte aligned
  const void* b1 = nullptr;       // [N1] or null
  const void* w2 = nullptr;       // [N1, N2]
  const void* b2 = nullptr;       // [N2] or null
  void* y = nullptr;              // [rows, N2]
  bool float_output = false;
  int64_t rows = 0, K = 0, N1 = 0, N2 = 0;
  float epsilon = 1e-5f;
  bool has_act = false;
  PointwiseActivation act = PointwiseActivation::kRelu;
  int sm_count = 0;             // multiprocessors: the grid spreads W1 over about this many CTAs
  float* shares = nullptr;      // scratch of classifier_head_shares_bytes(N1, sm_count)
  unsigned* counter = nullptr;  // the context's grid counter (CudaHandles::grid_counter)
};

// Most rows and logits the one-kernel path takes. On an H200 the kernel took 6.0 / 7.2 / 9.6 /
// 16 µs for 1 / 2 / 4 / 8 rows of DistilBERT's head in a CUDA graph; the three kernels it
// replaces about 8.5 at one row, and at 8 rows the fused head made the model 7 µs slower.
constexpr int64_t kHeadMaxRows = 2;
constexpr int64_t kHeadMaxLogits = 8;

// Whether the one-kernel path takes these sizes (rows, N2 within the limits above; W1's rows
// whole 16-byte vectors; its shared memory within the kernel's limit); otherwise the op
// composes its general kernels.
bool classifier_head_fits(DType dtype, int64_t rows, int64_t K, int64_t N1, int64_t N2, int sm_count);

// Scratch the one-kernel path needs for each CTA's shares of the logits.
size_t classifier_head_shares_bytes(int64_t N1, int sm_count);

// About one CTA per multiprocessor, each with a slice of W1's columns; the CTA that finishes
// last sums the slices' shares of the logits. cudaErrorInvalidValue when classifier_head_fits
// is false, W1 is not 16-byte aligned or the scratch or counter is missing.
cudaError_t launch_classifier_head(const HeadLaunch& a, cudaStream_t stream);

// The head with the transformer's last feed-forward block before it (inputs 7 to 12 of the op),
// and optionally the attention's output projection before that (inputs 13 to 15), in one launch
// for at most kHeadMaxRows rows: head.x is the block's input X0, or with wo the attention's
// context [rows, K] (the projection is square).
struct TailLaunch {
  HeadLaunch head;                // shares unused: the scratch below holds them
  const void* ffn_gamma = nullptr;  // [K]
  const void* ffn_beta = nullptr;   // [K] or null
  const void* f1 = nullptr;         // [K, NF], 16-byte aligned
  const void* fb1 = nullptr;        // [NF] or null
  const void* f2 = nullptr;         // [NF, K], 16-byte aligned
  const void* fb2 = nullptr;        // [K] or null
  int64_t NF = 0;
  float ffn_epsilon = 1e-5f;
  bool ffn_has_act = false;
  PointwiseActivation ffn_act = PointwiseActivation::kRelu;
  const void* wo = nullptr;        // [K, K], 16-byte aligned, or null: no projection
  const void* bo = nullptr;        // [K] or null
  const void* residual = nullptr;  // row r's residual at residual + r · residual_pitch
  int64_t residual_pitch = 0;      // elements
  void* scratch = nullptr;  // classifier_tail_scratch_bytes, 256-byte aligned
};

// Whether the one-kernel tail takes these sizes (rows and logits within the head's limits; K,
// NF and N1 whole 16-byte vectors, K at most 1024; its shared memory within the device's);
// otherwise the op composes its general kernels.
bool classifier_tail_fits(DType dtype, int64_t rows, int64_t K, int64_t NF, int64_t N1, int64_t N2, int sm_count,
                          bool projection);

// Scratch the one-kernel tail needs: each CTA's shares of the logits and partial sums of the
// block's output, the rows of that output and of the projection's, which CTAs exchange
// through L2.
size_t classifier_tail_scratch_bytes(DType dtype, int64_t K, int sm_count);

// Up to one CTA per multiprocessor, all resident at once (a cooperative launch): each copies its
// column slices of F1, F2 and W1 into shared memory at the start, and two grid-wide barriers
// pass the block's hidden rows and output rows between them (classifier_tail.cu).
// cudaErrorInvalidValue when classifier_tail_fits is false, a matrix is not 16-byte aligned or
// the scratch or counter is missing.
cudaError_t launch_classifier_tail(const TailLaunch& a, cudaStream_t stream);

}  // namespace ingot::cuda
