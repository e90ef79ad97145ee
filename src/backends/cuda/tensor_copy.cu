// Copies that only move bytes: strided copy (Slice, Expand, Tile, Transpose with contiguous
// inner runs), a tiled shared-memory transpose, Concat/Split in one launch, and fills.
// All are memory bound; the designs aim at full-width coalesced accesses on both sides.
#include <cstring>

#include "backends/cuda/tensor_device.cuh"
#include "backends/cuda/tensor_impl.h"

namespace ingot::cuda {
namespace {

using namespace tensor_dev;

// ---------------------------------------------------------------- element-wise strided copy
// One thread per output unit; its input offset comes from the unit's coordinates (dims
// innermost first, the outermost needs no division).
template <class Idx>
struct CopyParams {
  int rank = 0;
  Idx n = 0;
  Divisor<Idx> div[kMaxKernelDims];
  OffsetOf<Idx> strides[kMaxKernelDims] = {};
};

template <class U, class Idx>
__global__ void strided_copy_kernel(const U* __restrict__ in, U* __restrict__ out, CopyParams<Idx> p) {
  using Off = OffsetOf<Idx>;
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    Idx rem = i;
    Off off = 0;
#pragma unroll
    for (int k = 0; k < kMaxKernelDims; ++k) {
      if (k + 1 < p.rank) {
        Idx q = p.div[k].div(rem);
        off += Off(rem - q * p.div[k].d) * p.strides[k];
        rem = q;
      } else if (k + 1 == p.rank) {
        off += Off(rem) * p.strides[k];
      }
    }
    out[i] = in[off];
  }
}

// `d` is merged (outermost first) and already in units of `Bytes`.
template <int Bytes>
cudaError_t plain_copy(const void* in, void* out, const CopyDesc& d, cudaStream_t stream) {
  using U = typename UnitOf<Bytes>::type;
  int64_t n = 1, extent = 0;
  for (int k = 0; k < d.rank; ++k) {
    n *= d.dims[k];
    extent += (d.dims[k] - 1) * (d.strides[k] < 0 ? -d.strides[k] : d.strides[k]);
  }
  cudaError_t err = cudaSuccess;
  dispatch_index(n > extent ? n : extent, [&](auto idx_tag) {
    using Idx = decltype(idx_tag);
    CopyParams<Idx> p;
    p.rank = d.rank;
    p.n = Idx(n);
    for (int k = 0; k < d.rank; ++k) {  // innermost first
      p.div[k] = Divisor<Idx>(d.dims[d.rank - 1 - k]);
      p.strides[k] = OffsetOf<Idx>(d.strides[d.rank - 1 - k]);
    }
    strided_copy_kernel<U, Idx>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<const U*>(in), static_cast<U*>(out), p);
    err = cudaGetLastError();
  });
  return err;
}

// ---------------------------------------------------------------- tiled transpose
// Dim J is contiguous in the input, dim L (the output's last) is contiguous in the output. A
// 32x32 tile is read along J and written along L through shared memory (padded by one column
// so the transposed reads hit 32 different banks), so both sides are coalesced.
constexpr int kTile = 32, kTileRows = 8;

struct TransposeParams {
  int64_t nJ = 0, nL = 0, sL = 0, oJ = 0;  // sizes of J and L, L's input stride, J's output stride
  int64_t tilesJ = 0, tilesL = 0, blocks = 0;
  int nother = 0;  // the other dims, innermost first
  int64_t other_dims[kMaxKernelDims] = {};
  int64_t other_in[kMaxKernelDims] = {};
  int64_t other_out[kMaxKernelDims] = {};
};

template <class U>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_tiled_kernel(const U* __restrict__ in, U* __restrict__ out, TransposeParams p) {
  __shared__ U tile[kTile][kTile + 1];
  for (int64_t b = blockIdx.x; b < p.blocks; b += gridDim.x) {
    int64_t tl = b % p.tilesL, rest = b / p.tilesL;
    int64_t tj = rest % p.tilesJ, o = rest / p.tilesJ;
    int64_t in_base = 0, out_base = 0;
#pragma unroll
    for (int k = 0; k < kMaxKernelDims; ++k) {
      if (k < p.nother) {
        int64_t c = o % p.other_dims[k];
        o /= p.other_dims[k];
        in_base += c * p.other_in[k];
        out_base += c * p.other_out[k];
      }
    }
    const int64_t j0 = tj * kTile, l0 = tl * kTile;
    const int64_t j = j0 + threadIdx.x;
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t l = l0 + r;
      if (j < p.nJ && l < p.nL) tile[r][threadIdx.x] = in[in_base + l * p.sL + j];
    }
    __syncthreads();
    const int64_t l = l0 + threadIdx.x;
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t jj = j0 + r;
      if (jj < p.nJ && l < p.nL) out[out_base + jj * p.oJ + l] = tile[threadIdx.x][r];
    }
    __syncthreads();  // the tile is reused by the next iteration
  }
}

template <int Bytes>
cudaError_t tiled_transpose(const void* in, void* out, const CopyDesc& d, int J, cudaStream_t stream) {
  using U = typename UnitOf<Bytes>::type;
  const int L = d.rank - 1;
  int64_t ost[kMaxKernelDims];
  int64_t acc = 1;
  for (int k = d.rank - 1; k >= 0; --k) {
    ost[k] = acc;
    acc *= d.dims[k];
  }
  TransposeParams p;
  p.nJ = d.dims[J];
  p.nL = d.dims[L];
  p.sL = d.strides[L];
  p.oJ = ost[J];
  p.tilesJ = (p.nJ + kTile - 1) / kTile;
  p.tilesL = (p.nL + kTile - 1) / kTile;
  int64_t outer = 1;
  for (int k = d.rank - 1; k >= 0; --k) {
    if (k == J || k == L) continue;
    p.other_dims[p.nother] = d.dims[k];
    p.other_in[p.nother] = d.strides[k];
    p.other_out[p.nother] = ost[k];
    ++p.nother;
    outer *= d.dims[k];
  }
  p.blocks = p.tilesJ * p.tilesL * outer;
  unsigned grid = unsigned(p.blocks < (int64_t(1) << 20) ? p.blocks : (int64_t(1) << 20));
  transpose_tiled_kernel<U>
      <<<grid, dim3(kTile, kTileRows), 0, stream>>>(static_cast<const U*>(in), static_cast<U*>(out), p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_strided_copy(const void* in, void* out, size_t esize, const CopyDesc& desc, cudaStream_t stream) {
  for (int k = 0; k < desc.rank; ++k)
    if (desc.dims[k] == 0) return cudaSuccess;
  CopyDesc d = merge_copy_dims(desc);
  if (d.rank > kMaxKernelDims) return cudaErrorInvalidValue;
  if (d.rank == 0) return cudaMemcpyAsync(out, in, esize, cudaMemcpyDeviceToDevice, stream);
  const int L = d.rank - 1;
  if (d.rank == 1 && d.strides[0] == 1)
    return cudaMemcpyAsync(out, in, size_t(d.dims[0]) * esize, cudaMemcpyDeviceToDevice, stream);

  // A transpose whose output rows are strided in the input: tiles, when both tile sides are
  // long enough to fill a good part of a 32x32 tile.
  if (d.strides[L] != 1 && d.strides[L] != 0) {
    int J = -1;
    for (int k = 0; k < L; ++k)
      if (d.strides[k] == 1) J = k;
    if (J >= 0 && d.dims[J] >= 8 && d.dims[L] >= 8) {
      cudaError_t err = cudaErrorInvalidValue;
      dispatch_unit(esize, [&](auto b) { err = tiled_transpose<decltype(b)::value>(in, out, d, J, stream); });
      return err;
    }
  }

  // Contiguous inner runs move in units of up to 16 bytes: the run length and every other
  // stride (in bytes) must be multiples of the unit, and both pointers aligned to it.
  size_t unit = esize;
  if (d.strides[L] == 1) {
    int64_t counts[kMaxKernelDims];
    counts[0] = d.dims[L] * int64_t(esize);
    for (int k = 0; k < L; ++k) counts[k + 1] = d.strides[k] * int64_t(esize);
    const void* ptrs[2] = {in, out};
    unit = widest_unit(esize, counts, d.rank, ptrs, 2);
    if (unit != esize) {
      int64_t f = int64_t(unit / esize);
      d.dims[L] /= f;
      for (int k = 0; k < L; ++k) d.strides[k] /= f;
    }
  }
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(unit, [&](auto b) { err = plain_copy<decltype(b)::value>(in, out, d, stream); });
  return err;
}

// ---------------------------------------------------------------- Concat / Split
namespace {

constexpr int kMaxSegments = 64;

// blockIdx.y picks the segment (a Concat input or a Split output), so a block never searches
// for its segment and every thread of it reads the same parameters.
template <class Idx>
struct SegmentParams {
  Idx outer = 0, row_units = 0;
  const void* ptr[kMaxSegments] = {};
  Idx run[kMaxSegments] = {};
  Idx col[kMaxSegments] = {};
  Divisor<Idx> div[kMaxSegments];
};

template <class U, class Idx, bool kConcat>
__global__ void segment_copy_kernel(const U* big_in, U* big_out, const __grid_constant__ SegmentParams<Idx> p) {
  const int s = blockIdx.y;
  const Idx run = p.run[s];
  if (run == 0 || p.ptr[s] == nullptr) return;
  const Idx total = p.outer * run, col = p.col[s];
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    Idx row = p.div[s].div(i);
    Idx big = row * p.row_units + col + (i - row * run);
    if constexpr (kConcat)
      big_out[big] = static_cast<const U*>(p.ptr[s])[i];
    else
      static_cast<U*>(const_cast<void*>(p.ptr[s]))[i] = big_in[big];
  }
}

template <bool kConcat>
cudaError_t segment_copy(const void* big_in, void* big_out, const void* const* ptrs, const int64_t* run_bytes, int n,
                         int64_t outer, int64_t row_bytes, cudaStream_t stream) {
  if (outer == 0 || row_bytes == 0) return cudaSuccess;
  // One unit for all segments: it divides every run and aligns every pointer.
  const void* big = kConcat ? static_cast<const void*>(big_out) : big_in;
  size_t unit = 16;
  for (int i = 0; i < n; ++i) {
    if (run_bytes[i] == 0) continue;  // empty segments are skipped: their pointers do not matter
    const void* p[2] = {ptrs[i], big};
    int64_t c[2] = {run_bytes[i], row_bytes};
    size_t u = widest_unit(1, c, 2, p, 2);
    if (u < unit) unit = u;
  }
  cudaError_t err = cudaSuccess;
  for (int first = 0; first < n && err == cudaSuccess; first += kMaxSegments) {
    int count = n - first < kMaxSegments ? n - first : kMaxSegments;
    int64_t col = 0;
    for (int i = 0; i < first; ++i) col += run_bytes[i];
    dispatch_unit(unit, [&](auto b) {
      constexpr int B = decltype(b)::value;
      using U = typename UnitOf<B>::type;
      dispatch_index(outer * (row_bytes / B), [&](auto idx_tag) {
        using Idx = decltype(idx_tag);
        SegmentParams<Idx> p;
        p.outer = Idx(outer);
        p.row_units = Idx(row_bytes / B);
        int64_t longest = 0, c = col;
        for (int i = 0; i < count; ++i) {
          int64_t run = run_bytes[first + i] / B;
          p.ptr[i] = ptrs[first + i];
          p.run[i] = Idx(run);
          p.col[i] = Idx(c / B);
          p.div[i] = Divisor<Idx>(run > 0 ? run : 1);
          c += run_bytes[first + i];
          if (run > longest) longest = run;
        }
        dim3 grid(grid_for(outer * longest), unsigned(count));
        segment_copy_kernel<U, Idx, kConcat>
            <<<grid, kThreads, 0, stream>>>(static_cast<const U*>(big_in), static_cast<U*>(big_out), p);
        err = cudaGetLastError();
      });
    });
  }
  return err;
}

}  // namespace

cudaError_t launch_concat(const void* const* srcs, const int64_t* run_bytes, int n, int64_t outer, int64_t row_bytes,
                          void* dst, cudaStream_t stream) {
  return segment_copy<true>(nullptr, dst, srcs, run_bytes, n, outer, row_bytes, stream);
}

cudaError_t launch_split(const void* src, int64_t outer, int64_t row_bytes, void* const* dsts, const int64_t* run_bytes,
                         int n, cudaStream_t stream) {
  return segment_copy<false>(src, nullptr, const_cast<const void* const*>(dsts), run_bytes, n, outer, row_bytes,
                             stream);
}

// ---------------------------------------------------------------- fills
namespace {

template <class U, class Idx>
__global__ void fill_kernel(U* __restrict__ out, Idx n, U v) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) out[i] = v;
}

}  // namespace

cudaError_t launch_fill(void* out, size_t esize, int64_t n, uint64_t bits, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int64_t bytes = n * int64_t(esize);
  uint8_t pattern[16];
  bool uniform = true;  // every byte equal: a memset
  for (size_t b = 0; b < 16; ++b) {
    pattern[b] = uint8_t(bits >> (8 * (b % esize)));
    uniform &= pattern[b] == pattern[0];
  }
  if (uniform) return cudaMemsetAsync(out, pattern[0], size_t(bytes), stream);
  const void* ptrs[1] = {out};
  size_t unit = widest_unit(esize, &bytes, 1, ptrs, 1);
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(unit, [&](auto b) {
    constexpr int B = decltype(b)::value;
    using U = typename UnitOf<B>::type;
    U v;
    std::memcpy(&v, pattern, B);  // the pattern repeats every esize bytes, and esize divides B
    int64_t units = bytes / B;
    dispatch_index(units, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      fill_kernel<U, Idx><<<grid_for(units), kThreads, 0, stream>>>(static_cast<U*>(out), Idx(units), v);
      err = cudaGetLastError();
    });
  });
  return err;
}

}  // namespace ingot::cuda
