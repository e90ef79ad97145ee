// Launchers of the data-movement kernels (tensor_*.cu), shared by the kernel classes
// (tensor_*.cc). They take raw device pointers, element sizes and small descriptors passed to
// the kernels by value, so a launch needs no device-side metadata and is graph-capturable.
// Ops that only move bytes dispatch on the element size (1, 2, 4 or 8 bytes), never on the
// dtype; wider units (up to 16 bytes) are used where rows and pointers are aligned for them.
//
// Out-of-range indices cannot be reported from device code without a host read, so the GPU
// kernels give them a defined, harmless meaning: a gather reads zeros for them, a scatter
// skips them. Kernel classes validate indices known on the host at plan time and return the
// CPU kernel's error instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

// Dims a copy descriptor holds before merging (Tile doubles the input's rank).
constexpr int kMaxCopyDims = 16;
// Dims the device kernels index after merging (and the rank limit of the indexing kernels).
constexpr int kMaxKernelDims = 8;

// out (contiguous, shape dims) element (i_0..i_r-1) = in[Σ i_k·strides_k]; strides in elements,
// 0 for a broadcast dim, negative for a reversed one. Dims are outermost first.
struct CopyDesc {
  int rank = 0;
  int64_t dims[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
  void push(int64_t d, int64_t s) {
    dims[rank] = d;
    strides[rank] = s;
    ++rank;
  }
};

// Drops size-1 dims and merges neighbours that are one run in the input (stride_i =
// stride_{i+1}·dim_{i+1}), so most copies become one or two dims.
inline CopyDesc merge_copy_dims(const CopyDesc& in) {
  CopyDesc out;
  for (int i = 0; i < in.rank; ++i) {
    if (in.dims[i] == 1) continue;
    if (out.rank > 0 && out.strides[out.rank - 1] == in.strides[i] * in.dims[i]) {
      out.dims[out.rank - 1] *= in.dims[i];
      out.strides[out.rank - 1] = in.strides[i];
    } else {
      out.push(in.dims[i], in.strides[i]);
    }
  }
  return out;
}

// Copies with a descriptor whose merged rank is at most kMaxKernelDims (check with
// merge_copy_dims first). `in` points at the element of index (0, ..., 0). Dispatches to a
// memcpy (contiguous), a tiled shared-memory transpose (the output's last dim is strided in
// the input while another dim is contiguous), or an element-wise copy in units of up to 16
// bytes (the innermost run is contiguous or broadcast).
cudaError_t launch_strided_copy(const void* in, void* out, size_t esize, const CopyDesc& desc, cudaStream_t stream);

// Concat: dst viewed as [outer, row_bytes]; source i is [outer, run_bytes[i]] and lands at
// column offset Σ_{k<i} run_bytes[k]. One launch per 64 sources.
cudaError_t launch_concat(const void* const* srcs, const int64_t* run_bytes, int n, int64_t outer, int64_t row_bytes,
                          void* dst, cudaStream_t stream);
// Split, the inverse: dsts[i] may be null (an output nobody reads).
cudaError_t launch_split(const void* src, int64_t outer, int64_t row_bytes, void* const* dsts, const int64_t* run_bytes,
                         int n, cudaStream_t stream);

// Gather along an axis: out[o, j, :] = data[o, idx[j], :] with data [outer, axis_dim, inner]
// (inner in elements) and idx_count indices (int32 or int64, negative counts from the end).
cudaError_t launch_gather(const void* data, const void* idx, bool idx64, void* out, size_t esize, int64_t outer,
                          int64_t axis_dim, int64_t idx_count, int64_t inner, cudaStream_t stream);

// GatherElements / ScatterElements: `dims` is the indices' shape (= the output's for a gather,
// the updates' for a scatter), `strides` the data's row-major strides; indices replace the
// coordinate of `axis`.
struct ElementsDesc {
  int rank = 0, axis = 0;
  int64_t axis_dim = 0;
  int64_t dims[kMaxKernelDims] = {};
  int64_t strides[kMaxKernelDims] = {};
};
cudaError_t launch_gather_elements(const void* data, const void* idx, bool idx64, void* out, size_t esize,
                                   const ElementsDesc& desc, cudaStream_t stream);
// `out` already holds a copy of data; reduction none (duplicate indices: one of the writes wins).
cudaError_t launch_scatter_elements(void* out, const void* idx, bool idx64, const void* updates, size_t esize,
                                    const ElementsDesc& desc, cudaStream_t stream);

// GatherND / ScatterND: tuples of m indices address slices of `slice` elements. batch_dims
// leading dims are shared by data and indices (batches of them, batch_stride data elements
// apart); dims/strides are those of the m indexed axes.
struct NdDesc {
  int m = 0;
  int64_t batches = 1, batch_stride = 0, tuples = 0, slice = 0;
  int64_t dims[kMaxKernelDims] = {};
  int64_t strides[kMaxKernelDims] = {};
};
cudaError_t launch_gather_nd(const void* data, const void* idx, bool idx64, void* out, size_t esize, const NdDesc& desc,
                             cudaStream_t stream);
// `out` already holds a copy of data; reduction none (duplicate tuples: one of the writes wins).
cudaError_t launch_scatter_nd(void* out, const void* idx, bool idx64, const void* updates, size_t esize,
                              const NdDesc& desc, cudaStream_t stream);

// OneHot: out [outer, depth, inner] = values[1] where index (o, i) equals d (after adding depth
// to negatives), else values[0]. indices: int32, int64 or float32; values: 2 device elements.
cudaError_t launch_one_hot(const void* indices, DType idx_dtype, const void* values, void* out, size_t esize,
                           int64_t outer, int64_t depth, int64_t inner, cudaStream_t stream);

enum class PadKind { kConstant, kReflect, kEdge, kWrap };
struct PadDesc {
  int rank = 0;
  PadKind kind = PadKind::kConstant;
  int64_t out_dims[kMaxKernelDims] = {};
  int64_t in_dims[kMaxKernelDims] = {};
  int64_t begin[kMaxKernelDims] = {};  // pads before each axis (negative crops)
};
// Constant mode fills with *fill_device when non-null (a device scalar), else with fill_bits.
cudaError_t launch_pad(const void* in, void* out, size_t esize, const PadDesc& desc, const void* fill_device,
                       uint64_t fill_bits, cudaStream_t stream);

// out = n elements of size esize, each the bit pattern `bits`.
cudaError_t launch_fill(void* out, size_t esize, int64_t n, uint64_t bits, cudaStream_t stream);
// out[i] = values[i] for i < n (n <= kMaxKernelDims * 2): Shape and Size outputs.
struct Int64Values {
  int64_t v[2 * kMaxKernelDims] = {};
};
cudaError_t launch_write_int64(int64_t* out, int n, const Int64Values& values, cudaStream_t stream);
// Range: out[i] = start + i·delta. Integers in their own type; floats in double, rounded once.
cudaError_t launch_range(void* out, DType dtype, int64_t n, double start, double delta, int64_t istart, int64_t idelta,
                         cudaStream_t stream);
// EyeLike: [rows, cols] with `one_bits` at (i, i + k), zero elsewhere.
cudaError_t launch_eye(void* out, size_t esize, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits,
                       cudaStream_t stream);
// Trilu over [mats, rows, cols]: keeps the upper (j >= i + k) or lower (j <= i + k) triangle and
// zeroes the rest. k is k_device[0] when non-null (a device int64), else k_host.
cudaError_t launch_trilu(const void* in, void* out, size_t esize, int64_t mats, int64_t rows, int64_t cols, bool upper,
                         int64_t k_host, const int64_t* k_device, cudaStream_t stream);
// CumSum over [outer, n, inner] along n: float32/float16/bfloat16 (accumulated in float),
// int32, int64.
cudaError_t launch_cumsum(const void* in, void* out, DType dtype, int64_t outer, int64_t n, int64_t inner,
                          bool exclusive, bool reverse, cudaStream_t stream);

}  // namespace ingot::cuda
