// Launcher of ingot.EmbedLayerNorm's device code (see embed_layer_norm.cc for the contract).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

constexpr int kEmbedMaxLookups = 3;
constexpr int kEmbedMaxRank = 4;  // of the broadcast ids shape

struct EmbedArgs {
  const void* table[kEmbedMaxLookups] = {};
  const void* ids[kEmbedMaxLookups] = {};
  int64_t rows_in_table[kEmbedMaxLookups] = {};
  int64_t id_stride[kEmbedMaxLookups][kEmbedMaxRank] = {};  // 0 on broadcast dims
  bool ids64[kEmbedMaxLookups] = {};
  int64_t dims[kEmbedMaxRank] = {1, 1, 1, 1};  // the broadcast ids shape, right-aligned
  int lookups = 0, x_terms = 1;
  int64_t rows = 0, hidden = 0;
  const float* gamma = nullptr;  // [hidden] float32 (expanded at prepare time)
  const float* beta = nullptr;   // [hidden] or null
  float epsilon = 1e-5f;
  void* y = nullptr;
  void* sum = nullptr;  // optional
  L2Prefetch prefetch;  // weights the next steps read, requested by the kernel
};

// One warp per row: gathers and sums the rows (rounding to the tables' dtype after every
// addition, as the unfused graph), writes s into Y, then normalises Y in place from it.
cudaError_t launch_embed_layer_norm(DType dtype, const EmbedArgs& args, cudaStream_t stream);

}  // namespace ingot::cuda
