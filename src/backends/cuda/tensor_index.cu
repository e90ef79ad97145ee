// Index-driven copies: Gather (vectorised along the gathered rows: an embedding lookup moves
// 16-byte units), GatherElements/ScatterElements, GatherND/ScatterND and OneHot.
// An out-of-range index reads zeros (gathers) or is skipped (scatters): see tensor_impl.h.
#include <cmath>

#include "backends/cuda/tensor_device.cuh"
#include "backends/cuda/tensor_impl.h"

namespace ingot::cuda {
namespace {

using namespace tensor_dev;

// An index normalised against dim (negative counts from the end); false when out of range.
template <class I>
__device__ __forceinline__ bool fix_index(I raw, int64_t dim, int64_t& v) {
  v = int64_t(raw);
  if (v < 0) v += dim;
  return v >= 0 && v < dim;
}

template <class F>
void dispatch_idx(bool idx64, F&& f) {
  if (idx64)
    f(int64_t{});
  else
    f(int32_t{});
}

// ---------------------------------------------------------------- Gather
template <class Idx>
struct GatherParams {
  Idx n = 0;           // output units
  Divisor<Idx> inner;  // units per gathered row
  Divisor<Idx> count;  // number of indices
  int64_t axis_dim = 0;
};

template <class U, class Idx, class I>
__global__ void gather_kernel(const U* __restrict__ data, const I* __restrict__ idx, U* __restrict__ out,
                              GatherParams<Idx> p) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    Idx row = p.inner.div(i);
    Idx c = i - row * p.inner.d;
    Idx o = p.count.div(row);
    Idx j = row - o * p.count.d;
    int64_t v;
    U r{};
    if (fix_index(idx[j], p.axis_dim, v)) r = data[(Idx(o * p.axis_dim) + Idx(v)) * p.inner.d + c];
    out[i] = r;
  }
}

}  // namespace

cudaError_t launch_gather(const void* data, const void* idx, bool idx64, void* out, size_t esize, int64_t outer,
                          int64_t axis_dim, int64_t idx_count, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * idx_count * inner;
  if (n == 0) return cudaSuccess;
  const int64_t row_bytes = inner * int64_t(esize);
  const void* ptrs[2] = {data, out};
  const size_t unit = widest_unit(esize, &row_bytes, 1, ptrs, 2);
  const int64_t inner_u = row_bytes / int64_t(unit), n_u = n * int64_t(esize) / int64_t(unit);
  const int64_t data_u = outer * axis_dim * inner_u;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(unit, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    dispatch_index(n_u > data_u ? n_u : data_u, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      GatherParams<Idx> p;
      p.n = Idx(n_u);
      p.inner = Divisor<Idx>(inner_u);
      p.count = Divisor<Idx>(idx_count);
      p.axis_dim = axis_dim;
      dispatch_idx(idx64, [&](auto itag) {
        using I = decltype(itag);
        gather_kernel<U, Idx, I><<<grid_for(n_u), kThreads, 0, stream>>>(
            static_cast<const U*>(data), static_cast<const I*>(idx), static_cast<U*>(out), p);
        err = cudaGetLastError();
      });
    });
  });
  return err;
}

// ---------------------------------------------------------------- GatherElements / ScatterElements
namespace {

template <class Idx>
struct ElementsParams {
  int rank = 0, axis = 0;  // axis counted innermost first
  Idx n = 0;
  int64_t axis_dim = 0;
  OffsetOf<Idx> axis_stride = 0;
  Divisor<Idx> div[kMaxKernelDims];
  OffsetOf<Idx> strides[kMaxKernelDims] = {};  // data strides, innermost first
};

// The data offset of element i of the indices' shape, without the indexed axis's term.
template <class Idx>
__device__ __forceinline__ OffsetOf<Idx> elements_base(const ElementsParams<Idx>& p, Idx i) {
  using Off = OffsetOf<Idx>;
  Idx rem = i;
  Off off = 0;
#pragma unroll
  for (int k = 0; k < kMaxKernelDims; ++k) {
    if (k < p.rank) {
      Idx c = rem;
      if (k + 1 < p.rank) {
        Idx q = p.div[k].div(rem);
        c = rem - q * p.div[k].d;
        rem = q;
      }
      if (k != p.axis) off += Off(c) * p.strides[k];
    }
  }
  return off;
}

template <class U, class Idx, class I>
__global__ void gather_elements_kernel(const U* __restrict__ data, const I* __restrict__ idx, U* __restrict__ out,
                                       ElementsParams<Idx> p) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    int64_t v;
    U r{};
    if (fix_index(idx[i], p.axis_dim, v)) r = data[elements_base(p, i) + OffsetOf<Idx>(v) * p.axis_stride];
    out[i] = r;
  }
}

template <class U, class Idx, class I>
__global__ void scatter_elements_kernel(U* __restrict__ out, const I* __restrict__ idx, const U* __restrict__ updates,
                                        ElementsParams<Idx> p) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    int64_t v;
    if (fix_index(idx[i], p.axis_dim, v)) out[elements_base(p, i) + OffsetOf<Idx>(v) * p.axis_stride] = updates[i];
  }
}

template <bool kGather>
cudaError_t elements_launch(const void* data_or_out, const void* idx, bool idx64, void* out_or_null,
                            const void* updates, size_t esize, const ElementsDesc& d, cudaStream_t stream) {
  int64_t n = 1, extent = (d.axis_dim - 1) * d.strides[d.axis];
  for (int k = 0; k < d.rank; ++k) {
    n *= d.dims[k];
    if (k != d.axis) extent += (d.dims[k] - 1) * d.strides[k];
  }
  if (n == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(esize, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    dispatch_index(n > extent ? n : extent, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      ElementsParams<Idx> p;
      p.rank = d.rank;
      p.axis = d.rank - 1 - d.axis;
      p.n = Idx(n);
      p.axis_dim = d.axis_dim;
      p.axis_stride = OffsetOf<Idx>(d.strides[d.axis]);
      for (int k = 0; k < d.rank; ++k) {
        p.div[k] = Divisor<Idx>(d.dims[d.rank - 1 - k]);
        p.strides[k] = OffsetOf<Idx>(d.strides[d.rank - 1 - k]);
      }
      dispatch_idx(idx64, [&](auto itag) {
        using I = decltype(itag);
        if constexpr (kGather) {
          gather_elements_kernel<U, Idx, I><<<grid_for(n), kThreads, 0, stream>>>(
              static_cast<const U*>(data_or_out), static_cast<const I*>(idx), static_cast<U*>(out_or_null), p);
        } else {
          scatter_elements_kernel<U, Idx, I>
              <<<grid_for(n), kThreads, 0, stream>>>(static_cast<U*>(const_cast<void*>(data_or_out)),
                                                     static_cast<const I*>(idx), static_cast<const U*>(updates), p);
        }
        err = cudaGetLastError();
      });
    });
  });
  return err;
}

}  // namespace

cudaError_t launch_gather_elements(const void* data, const void* idx, bool idx64, void* out, size_t esize,
                                   const ElementsDesc& desc, cudaStream_t stream) {
  return elements_launch<true>(data, idx, idx64, out, nullptr, esize, desc, stream);
}

cudaError_t launch_scatter_elements(void* out, const void* idx, bool idx64, const void* updates, size_t esize,
                                    const ElementsDesc& desc, cudaStream_t stream) {
  return elements_launch<false>(out, idx, idx64, nullptr, updates, esize, desc, stream);
}

// ---------------------------------------------------------------- GatherND / ScatterND
namespace {

template <class Idx>
struct NdParams {
  int m = 0;
  Idx n = 0;             // units of the gathered output (or of the updates)
  Divisor<Idx> slice;    // units per slice
  Divisor<Idx> tuples;   // tuples per batch
  Idx batch_stride = 0;  // units
  int64_t dims[kMaxKernelDims] = {};
  Idx strides[kMaxKernelDims] = {};  // units
};

// The data offset (in units) of tuple `row`'s slice; false when an index is out of range.
template <class Idx, class I>
__device__ __forceinline__ bool nd_offset(const NdParams<Idx>& p, const I* __restrict__ idx, Idx row, Idx& off) {
  const I* t = idx + size_t(row) * size_t(p.m);
  off = p.tuples.div(row) * p.batch_stride;
  bool ok = true;
#pragma unroll
  for (int k = 0; k < kMaxKernelDims; ++k) {
    if (k < p.m) {
      int64_t v;
      ok &= fix_index(t[k], p.dims[k], v);
      off += Idx(v) * p.strides[k];
    }
  }
  return ok;
}

template <class U, class Idx, class I>
__global__ void gather_nd_kernel(const U* __restrict__ data, const I* __restrict__ idx, U* __restrict__ out,
                                 NdParams<Idx> p) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    Idx row = p.slice.div(i), off;
    U r{};
    if (nd_offset(p, idx, row, off)) r = data[off + (i - row * p.slice.d)];
    out[i] = r;
  }
}

template <class U, class Idx, class I>
__global__ void scatter_nd_kernel(U* __restrict__ out, const I* __restrict__ idx, const U* __restrict__ updates,
                                  NdParams<Idx> p) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    Idx row = p.slice.div(i), off;
    if (nd_offset(p, idx, row, off)) out[off + (i - row * p.slice.d)] = updates[i];
  }
}

template <bool kGather>
cudaError_t nd_launch(const void* data_or_out, const void* idx, bool idx64, void* out_or_null, const void* updates,
                      size_t esize, const NdDesc& d, cudaStream_t stream) {
  const int64_t n = d.batches * d.tuples * d.slice;
  if (n == 0) return cudaSuccess;
  // Units: the slice (bytes) and every stride are multiples of it (strides of the indexed axes
  // and the batch stride are multiples of the slice), and the pointers are aligned to it.
  const int64_t slice_bytes = d.slice * int64_t(esize);
  const void* ptrs[3] = {data_or_out, out_or_null, updates};
  const size_t unit = widest_unit(esize, &slice_bytes, 1, ptrs, 3);
  const int64_t f = int64_t(unit / esize);
  int64_t extent = d.batches * d.batch_stride / f;
  for (int k = 0; k < d.m; ++k) extent += d.dims[k] * d.strides[k] / f;
  const int64_t n_u = n / f;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(unit, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    dispatch_index(n_u > extent ? n_u : extent, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      NdParams<Idx> p;
      p.m = d.m;
      p.n = Idx(n_u);
      p.slice = Divisor<Idx>(d.slice / f);
      p.tuples = Divisor<Idx>(d.tuples > 0 ? d.tuples : 1);
      p.batch_stride = Idx(d.batch_stride / f);
      for (int k = 0; k < d.m; ++k) {
        p.dims[k] = d.dims[k];
        p.strides[k] = Idx(d.strides[k] / f);
      }
      dispatch_idx(idx64, [&](auto itag) {
        using I = decltype(itag);
        if constexpr (kGather) {
          gather_nd_kernel<U, Idx, I><<<grid_for(n_u), kThreads, 0, stream>>>(
              static_cast<const U*>(data_or_out), static_cast<const I*>(idx), static_cast<U*>(out_or_null), p);
        } else {
          scatter_nd_kernel<U, Idx, I>
              <<<grid_for(n_u), kThreads, 0, stream>>>(static_cast<U*>(const_cast<void*>(data_or_out)),
                                                       static_cast<const I*>(idx), static_cast<const U*>(updates), p);
        }
        err = cudaGetLastError();
      });
    });
  });
  return err;
}

}  // namespace

cudaError_t launch_gather_nd(const void* data, const void* idx, bool idx64, void* out, size_t esize, const NdDesc& desc,
                             cudaStream_t stream) {
  return nd_launch<true>(data, idx, idx64, out, nullptr, esize, desc, stream);
}

cudaError_t launch_scatter_nd(void* out, const void* idx, bool idx64, const void* updates, size_t esize,
                              const NdDesc& desc, cudaStream_t stream) {
  return nd_launch<false>(out, idx, idx64, nullptr, updates, esize, desc, stream);
}

// ---------------------------------------------------------------- OneHot
namespace {

// The CPU kernel's rule: the index as a double, "off" everywhere when it is NaN or its
// magnitude is not below depth + 1, else truncated, negatives counted from the end.
template <class U, class I>
__global__ void one_hot_kernel(const I* __restrict__ indices, const U* __restrict__ values, U* __restrict__ out,
                               int64_t n, int64_t depth, int64_t inner) {
  const U off_v = values[0], on_v = values[1];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % inner, rest = i / inner;
    int64_t d = rest % depth, o = rest / depth;
    double fi = double(indices[o * inner + c]);
    bool hit = false;
    if (fabs(fi) < double(depth) + 1) {
      int64_t k = int64_t(fi);
      if (k < 0) k += depth;
      hit = k == d;
    }
    out[i] = hit ? on_v : off_v;
  }
}

}  // namespace

cudaError_t launch_one_hot(const void* indices, DType idx_dtype, const void* values, void* out, size_t esize,
                           int64_t outer, int64_t depth, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * depth * inner;
  if (n == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  auto go = [&](auto itag) {
    using I = decltype(itag);
    dispatch_unit(esize, [&](auto b) {
      using U = typename UnitOf<decltype(b)::value>::type;
      one_hot_kernel<U, I><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const I*>(indices), static_cast<const U*>(values), static_cast<U*>(out), n, depth, inner);
      err = cudaGetLastError();
    });
  };
  switch (idx_dtype) {
    case DType::kInt32:
      go(int32_t{});
      break;
    case DType::kInt64:
      go(int64_t{});
      break;
    case DType::kFloat32:
      go(float{});
      break;
    default:
      break;
  }
  return err;
}

}  // namespace ingot::cuda
