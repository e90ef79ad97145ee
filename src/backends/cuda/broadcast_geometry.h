// Numpy broadcasting of n inputs onto an output, as the elementwise CUDA kernels index it:
// output dims innermost first, adjacent dims merged wherever every input steps across the
// boundary contiguously (or broadcasts on both sides), strides in elements per input (0 along
// broadcast dims). Fixed-size arrays, no allocation: it runs in compute() on every call.
#pragma once

#include <cstdint>

#include "ingot/tensor.h"

namespace ingot::cuda {

// False when more than R dims remain after merging. A scalar output becomes one dim of 1.
template <int kInputs, int R>
bool merge_broadcast(const Shape* const* ins, int n, const Shape& out, int& rank, int64_t& numel, int64_t (&dims)[R],
                     int64_t (&strides)[kInputs][R]) {
  rank = 0;
  numel = 1;
  const int r = int(out.size());
  int64_t running[kInputs];  // elements of input k inside the dims seen so far
  for (int k = 0; k < n; ++k) running[k] = 1;
  for (int d = r - 1; d >= 0; --d) {
    const int64_t extent = out[size_t(d)];
    numel *= extent;
    int64_t stride[kInputs];
    for (int k = 0; k < n; ++k) {
      const Shape& s = *ins[k];
      const int j = d - (r - int(s.size()));
      const int64_t in_extent = j >= 0 ? s[size_t(j)] : 1;
      stride[k] = in_extent == 1 ? 0 : running[k];
      running[k] *= in_extent;
    }
    if (extent == 1) continue;
    bool merge = rank > 0;
    for (int k = 0; k < n && merge; ++k) merge = stride[k] == strides[k][rank - 1] * dims[rank - 1];
    if (merge) {
      dims[rank - 1] *= extent;
      continue;
    }
    if (rank == R) return false;
    dims[rank] = extent;
    for (int k = 0; k < n; ++k) strides[k][rank] = stride[k];
    ++rank;
  }
  if (rank == 0) {
    rank = 1;
    dims[0] = 1;
  }
  return true;
}

}  // namespace ingot::cuda
