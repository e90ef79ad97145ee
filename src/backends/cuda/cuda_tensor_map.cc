#include "backends/cuda/cuda_tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

namespace ingot::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    PFN_cuTensorMapEncodeTiled_v12000 f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&f), 12000,
                                         cudaEnableDefault, &q) != cudaSuccess)
      f = nullptr;
    return f;
  }();
  return fn;
}

}  // namespace

bool encode_tensor_map(CUtensorMap* map, DType dtype, const void* base, int64_t rows, int64_t cols, int64_t ld,
                       int box_rows, int box_cols, bool swizzle_128b) {
  return encode_tensor_map(map, dtype, base, rows, cols, ld, box_rows, box_cols,
                           swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE);
}

bool encode_tensor_map(CUtensorMap* map, DType dtype, const void* base, int64_t rows, int64_t cols, int64_t ld,
                       int box_rows, int box_cols, CUtensorMapSwizzle swizzle) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  if (!encode) return false;
  CUtensorMapDataType type;
  switch (dtype) {
    case DType::kFloat32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case DType::kFloat16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case DType::kBFloat16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    default: return false;
  }
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * cuuint64_t(dtype_size(dtype))};
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  return encode(map, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace ingot::cuda
