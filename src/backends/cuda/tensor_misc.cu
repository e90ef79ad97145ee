// Pad, Trilu, EyeLike, Range, CumSum and the tiny writes of Shape/Size outputs.
#include <cstring>

#include "backends/cuda/tensor_device.cuh"
#include "backends/cuda/tensor_impl.h"

namespace ingot::cuda {
namespace {

using namespace tensor_dev;

// ---------------------------------------------------------------- Pad
template <class Idx>
struct PadParams {
  int rank = 0;
  PadKind kind = PadKind::kConstant;
  Idx n = 0;
  Divisor<Idx> div[kMaxKernelDims];      // output dims, innermost first
  int64_t in_dims[kMaxKernelDims] = {};  // innermost first
  int64_t in_strides[kMaxKernelDims] = {};
  int64_t begin[kMaxKernelDims] = {};
};

// The CPU kernel's map from an output coordinate to an input one; -1 for the constant fill.
__device__ __forceinline__ int64_t pad_source(int64_t o, int64_t d, int64_t b, PadKind kind) {
  int64_t i = o - b;
  if (i >= 0 && i < d) return i;
  switch (kind) {
    case PadKind::kConstant:
      return -1;
    case PadKind::kEdge:
      return i < 0 ? 0 : d - 1;
    case PadKind::kWrap:
      return ((i % d) + d) % d;
    case PadKind::kReflect: {
      if (d == 1) return 0;
      int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

template <class U, class Idx>
__global__ void pad_kernel(const U* __restrict__ in, U* __restrict__ out, PadParams<Idx> p, const U* fill_device,
                           U fill) {
  if (fill_device) fill = *fill_device;
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    Idx rem = i;
    int64_t off = 0;
    bool inside = true;
#pragma unroll
    for (int k = 0; k < kMaxKernelDims; ++k) {
      if (k < p.rank) {
        Idx c = rem;
        if (k + 1 < p.rank) {
          Idx q = p.div[k].div(rem);
          c = rem - q * p.div[k].d;
          rem = q;
        }
        int64_t s = pad_source(int64_t(c), p.in_dims[k], p.begin[k], p.kind);
        inside &= s >= 0;
        off += s * p.in_strides[k];
      }
    }
    out[i] = inside ? in[off] : fill;
  }
}

}  // namespace

cudaError_t launch_pad(const void* in, void* out, size_t esize, const PadDesc& d, const void* fill_device,
                       uint64_t fill_bits, cudaStream_t stream) {
  int64_t n = 1;
  for (int k = 0; k < d.rank; ++k) n *= d.out_dims[k];
  if (n == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(esize, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    U fill;
    std::memcpy(&fill, &fill_bits, sizeof(U));
    dispatch_index(n, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      PadParams<Idx> p;
      p.rank = d.rank;
      p.kind = d.kind;
      p.n = Idx(n);
      int64_t stride = 1;
      for (int k = 0; k < d.rank; ++k) {  // innermost first
        int a = d.rank - 1 - k;
        p.div[k] = Divisor<Idx>(d.out_dims[a]);
        p.in_dims[k] = d.in_dims[a];
        p.in_strides[k] = stride;
        p.begin[k] = d.begin[a];
        stride *= d.in_dims[a];
      }
      pad_kernel<U, Idx><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const U*>(in), static_cast<U*>(out), p,
                                                               static_cast<const U*>(fill_device), fill);
      err = cudaGetLastError();
    });
  });
  return err;
}

// ---------------------------------------------------------------- Shape / Size values
namespace {

__global__ void write_int64_kernel(int64_t* out, int n, Int64Values v) {
  if (int(threadIdx.x) < n) out[threadIdx.x] = v.v[threadIdx.x];
}

}  // namespace

cudaError_t launch_write_int64(int64_t* out, int n, const Int64Values& values, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (n > 2 * kMaxKernelDims) return cudaErrorInvalidValue;
  write_int64_kernel<<<1, 2 * kMaxKernelDims, 0, stream>>>(out, n, values);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- Range
namespace {

template <class T>
__device__ __forceinline__ T from_double(double v);
template <>
__device__ __forceinline__ float from_double<float>(double v) {
  return float(v);
}
template <>
__device__ __forceinline__ double from_double<double>(double v) {
  return v;
}
// Through float, as the CPU kernel's float16(float(v)) and bfloat16(float(v)).
template <>
__device__ __forceinline__ __half from_double<__half>(double v) {
  return __float2half_rn(float(v));
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(float(v));
}

template <class T>
__global__ void range_float_kernel(T* out, int64_t n, double start, double delta) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_double<T>(start + double(i) * delta);
}

// Integer ranges wrap like the CPU kernel's T(a + T(i)·d): computed in 64 bits, the low bits
// are the same.
template <class T>
__global__ void range_int_kernel(T* out, int64_t n, int64_t start, int64_t delta) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = T(uint64_t(start) + uint64_t(i) * uint64_t(delta));
}

}  // namespace

cudaError_t launch_range(void* out, DType dtype, int64_t n, double start, double delta, int64_t istart, int64_t idelta,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const unsigned grid = grid_for(n);
  switch (dtype) {
    case DType::kFloat32:
      range_float_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(out), n, start, delta);
      break;
    case DType::kFloat64:
      range_float_kernel<<<grid, kThreads, 0, stream>>>(static_cast<double*>(out), n, start, delta);
      break;
    case DType::kFloat16:
      range_float_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(out), n, start, delta);
      break;
    case DType::kBFloat16:
      range_float_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(out), n, start, delta);
      break;
    case DType::kInt32:
      range_int_kernel<<<grid, kThreads, 0, stream>>>(static_cast<int32_t*>(out), n, istart, idelta);
      break;
    case DType::kInt64:
      range_int_kernel<<<grid, kThreads, 0, stream>>>(static_cast<int64_t*>(out), n, istart, idelta);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// ---------------------------------------------------------------- EyeLike / Trilu
namespace {

template <class U, class Idx>
__global__ void eye_kernel(U* __restrict__ out, Idx n, Divisor<Idx> cols, int64_t k, U one) {
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Idx r = cols.div(i);
    int64_t c = int64_t(i - r * cols.d);
    out[i] = c == int64_t(r) + k ? one : U{};
  }
}

template <class U, class Idx>
__global__ void trilu_kernel(const U* __restrict__ in, U* __restrict__ out, Idx n, Divisor<Idx> cols, Divisor<Idx> rows,
                             bool upper, int64_t k, const int64_t* k_device) {
  if (k_device) k = *k_device;
  const Idx step = Idx(gridDim.x) * blockDim.x;
  for (Idx i = Idx(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Idx row = cols.div(i);
    int64_t j = int64_t(i - row * cols.d);
    int64_t r = int64_t(row - rows.div(row) * rows.d);
    bool keep = upper ? j - r >= k : j - r <= k;
    out[i] = keep ? in[i] : U{};
  }
}

}  // namespace

cudaError_t launch_eye(void* out, size_t esize, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits,
                       cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(esize, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    U one;
    std::memcpy(&one, &one_bits, sizeof(U));
    dispatch_index(n, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      eye_kernel<U, Idx>
          <<<grid_for(n), kThreads, 0, stream>>>(static_cast<U*>(out), Idx(n), Divisor<Idx>(cols), k, one);
      err = cudaGetLastError();
    });
  });
  return err;
}

cudaError_t launch_trilu(const void* in, void* out, size_t esize, int64_t mats, int64_t rows, int64_t cols, bool upper,
                         int64_t k_host, const int64_t* k_device, cudaStream_t stream) {
  const int64_t n = mats * rows * cols;
  if (n == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_unit(esize, [&](auto b) {
    using U = typename UnitOf<decltype(b)::value>::type;
    dispatch_index(n, [&](auto idx_tag) {
      using Idx = decltype(idx_tag);
      trilu_kernel<U, Idx><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const U*>(in), static_cast<U*>(out),
                                                                 Idx(n), Divisor<Idx>(cols), Divisor<Idx>(rows), upper,
                                                                 k_host, k_device);
      err = cudaGetLastError();
    });
  });
  return err;
}

// ---------------------------------------------------------------- CumSum
namespace {

// Accumulator types as the CPU kernel's: float for the float types, the type itself for ints.
template <class T>
struct Acc {
  using type = T;
};
template <>
struct Acc<__half> {
  using type = float;
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
};

template <class T>
__device__ __forceinline__ typename Acc<T>::type load_acc(T v) {
  return typename Acc<T>::type(v);
}
template <>
__device__ __forceinline__ float load_acc<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float load_acc<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ __forceinline__ T store_acc(typename Acc<T>::type v) {
  return T(v);
}
template <>
__device__ __forceinline__ __half store_acc<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 store_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// One thread per (outer, inner) column, summing along the axis in order (the CPU's order, so
// float sums match it bit for bit); columns are adjacent in memory, so accesses coalesce.
template <class T>
__global__ void cumsum_columns_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t outer, int64_t n,
                                      int64_t inner, bool exclusive, bool reverse) {
  using A = typename Acc<T>::type;
  const int64_t cols = outer * inner;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, i = c - o * inner;
    const int64_t base = o * n * inner + i;
    A acc = A(0);
    for (int64_t s = 0; s < n; ++s) {
      int64_t k = reverse ? n - 1 - s : s;
      A v = load_acc(in[base + k * inner]);
      if (exclusive) {
        out[base + k * inner] = store_acc<T>(acc);
        acc = A(acc + v);
      } else {
        acc = A(acc + v);
        out[base + k * inner] = store_acc<T>(acc);
      }
    }
  }
}

constexpr int kScanThreads = 256;

// One block per row of a last-axis scan: chunks of 256 elements are scanned with warp
// shuffles, warp totals through shared memory, and a running carry between chunks.
template <class T>
__global__ void __launch_bounds__(kScanThreads)
    cumsum_rows_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t n, bool exclusive,
                       bool reverse) {
  using A = typename Acc<T>::type;
  __shared__ A warp_sums[kScanThreads / 32];
  __shared__ A incl[kScanThreads];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* src = in + row * n;
    T* dst = out + row * n;
    A carry = A(0);
    for (int64_t c0 = 0; c0 < n; c0 += kScanThreads) {
      const int64_t s = c0 + t;
      const int64_t k = reverse ? n - 1 - s : s;
      A v = s < n ? load_acc(src[k]) : A(0);
      A x = v;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        A y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d) x = A(x + y);
      }
      if (lane == 31) warp_sums[warp] = x;
      __syncthreads();
      if (warp == 0) {
        A w = lane < kScanThreads / 32 ? warp_sums[lane] : A(0);
#pragma unroll
        for (int d = 1; d < kScanThreads / 32; d <<= 1) {
          A y = __shfl_up_sync(0xffffffffu, w, d);
          if (lane >= d) w = A(w + y);
        }
        if (lane < kScanThreads / 32) warp_sums[lane] = w;
      }
      __syncthreads();
      if (warp > 0) x = A(x + warp_sums[warp - 1]);
      incl[t] = x;
      __syncthreads();
      if (s < n) {
        A before = t > 0 ? incl[t - 1] : A(0);
        dst[k] = store_acc<T>(A(carry + (exclusive ? before : x)));
      }
      carry = A(carry + incl[kScanThreads - 1]);
      __syncthreads();  // warp_sums and incl are rewritten by the next chunk
    }
  }
}

template <class T>
cudaError_t cumsum_typed(const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                         bool reverse, cudaStream_t stream) {
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  if (inner == 1 && n >= 64) {
    unsigned grid = unsigned(outer < 65535 * 8 ? outer : 65535 * 8);
    cumsum_rows_kernel<T><<<grid, kScanThreads, 0, stream>>>(x, y, outer, n, exclusive, reverse);
  } else {
    cumsum_columns_kernel<T>
        <<<grid_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, n, inner, exclusive, reverse);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_cumsum(const void* in, void* out, DType dtype, int64_t outer, int64_t n, int64_t inner,
                          bool exclusive, bool reverse, cudaStream_t stream) {
  if (outer * n * inner == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kFloat32:
      return cumsum_typed<float>(in, out, outer, n, inner, exclusive, reverse, stream);
    case DType::kFloat16:
      return cumsum_typed<__half>(in, out, outer, n, inner, exclusive, reverse, stream);
    case DType::kBFloat16:
      return cumsum_typed<__nv_bfloat16>(in, out, outer, n, inner, exclusive, reverse, stream);
    case DType::kInt32:
      return cumsum_typed<int32_t>(in, out, outer, n, inner, exclusive, reverse, stream);
    case DType::kInt64:
      return cumsum_typed<int64_t>(in, out, outer, n, inner, exclusive, reverse, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace ingot::cuda
