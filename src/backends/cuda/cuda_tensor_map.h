// Tensor maps for the copy engine's 2-D tensor copies (cp.async.bulk.tensor): the description
// of a row-major matrix in device memory and the box one copy moves into shared memory.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

// A row-major [rows, cols] matrix of dtype (float32, float16 or bfloat16) at `base` with `ld`
// elements a row, copied in boxes of box_rows x box_cols (box_cols · element size a multiple of
// 16 bytes; both at most 256), 128-byte swizzled or dense; elements past the matrix read as
// zero. False when the driver lacks the entry point or refuses the description (base not
// 16-byte aligned, a row pitch that is not a multiple of 16 bytes).
bool encode_tensor_map(CUtensorMap* map, DType dtype, const void* base, int64_t rows, int64_t cols, int64_t ld,
                       int box_rows, int box_cols, bool swizzle_128b);
// The same with any of the copy engine's swizzles (64-byte: boxes of 32 16-bit columns).
bool encode_tensor_map(CUtensorMap* map, DType dtype, const void* base, int64_t rows, int64_t cols, int64_t ld,
                       int box_rows, int box_cols, CUtensorMapSwizzle swizzle);

}  // namespace ingot::cuda
