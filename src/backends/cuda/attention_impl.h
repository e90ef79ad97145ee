// Launcher of ingot.Attention's core (softmax(scale · Q Kᵀ + mask) V per head), shared by
// attention.cc (host side) and attention.cu (device code).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

// Largest head size either kernel handles (the flash kernel keeps a 16-row × D block of
// output in registers; the generic kernel stages K and V tiles of D floats in shared memory).
constexpr int64_t kAttentionMaxHeadDim = 128;
// Query positions one launch of the query-rows kernel takes (more are launched in chunks).
constexpr int kAttentionQueryChunk = 16;

struct AttentionCoreArgs {
  const void* qkv = nullptr;  // [B*S, 3N]: Q | K | V, head h at columns h*D of each
  void* context = nullptr;    // [B*Sq, N]: heads side by side (head h at columns h*D)
  int64_t B = 0, S = 0, H = 0, D = 0;
  DType dtype = DType::kFloat32;  // of qkv and context
  // Mask, read through element strides of its broadcast to [B, H, S, S] (0 on broadcast axes);
  // null: none. kBool or an integer dtype: zero adds `filter`; a float dtype: added as is.
  const void* mask = nullptr;
  DType mask_dtype = DType::kBool;
  int64_t mask_b = 0, mask_h = 0, mask_q = 0, mask_k = 0;
  float scale = 1.f, filter = 0.f;
  bool causal = false, nan_to_zero = false;
  int sm_count = 1;  // multiprocessors, to size query blocks so small batches fill the GPU
  // ingot.Attention's query_rows: the query positions (in [0, S)) of the Sq = query_count output
  // rows of each batch; query_count 0: every position (Sq = S).
  const int64_t* query_pos = nullptr;
  int64_t query_count = 0;
  L2Prefetch prefetch;  // weights the next steps read, requested by the core's kernel
};

// Enqueues the core on `stream`; D <= kAttentionMaxHeadDim, dtype float32/float16/bfloat16,
// mask_dtype bool/int8/uint8/int32/int64/float32/float16/bfloat16.
cudaError_t launch_attention_core(const AttentionCoreArgs& args, cudaStream_t stream);

}  // namespace ingot::cuda
