// Device code around the cuBLASLt products (see gemm_impl.h): Gemm's broadcast C, the
// in-place activations cuBLASLt's epilogues cannot compute to float32 accuracy, and the
// widening copy of a half-precision product into a float32 output. All are memory-bound; the
// activation moves 16 bytes per access.
#include <algorithm>
#include <type_traits>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/pointwise_activation.cuh"

namespace ingot::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void broadcast_matrix_kernel(const T* __restrict__ c, int64_t row_stride, int64_t col_stride, float scale,
                                        T* __restrict__ y, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = idx / cols, j = idx - i * cols;
    y[idx] = from_float<T>(scale * to_float(c[i * row_stride + j * col_stride]));
  }
}

// 16 bytes of T: one vector load and store (8 halves or 4 floats).
template <class T>
struct alignas(16) Vec16 {
  static constexpr int kSize = int(16 / sizeof(T));
  T v[kSize];
};

// The first nvec·Vec16::kSize elements go 16 bytes at a time (y is 16-byte aligned when
// nvec > 0); the `tail` elements after them one at a time.
template <class T, PointwiseActivation A>
__global__ void activation_inplace_kernel(T* __restrict__ y, int64_t nvec, int64_t tail) {
  using V = Vec16<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  V* yv = reinterpret_cast<V*>(y);
  for (int64_t i = first; i < nvec; i += stride) {
    V v = yv[i];
#pragma unroll
    for (int k = 0; k < V::kSize; ++k) v.v[k] = from_float<T>(activate(to_float(v.v[k]), A));
    yv[i] = v;
  }
  T* rest = y + nvec * V::kSize;
  for (int64_t i = first; i < tail; i += stride) rest[i] = from_float<T>(activate(to_float(rest[i]), A));
}

template <class T, PointwiseActivation A>
void launch_activation(T* y, int64_t n, cudaStream_t stream) {
  constexpr int kVec = Vec16<T>::kSize;
  const bool aligned = reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int64_t nvec = aligned ? n / kVec : 0;
  const int64_t tail = n - nvec * kVec;
  activation_inplace_kernel<T, A>
      <<<blocks_for(nvec > tail ? nvec : tail, kThreads), kThreads, 0, stream>>>(y, nvec, tail);
}

// Each block copies 16 bytes a thread of a row at a time (8 half-precision elements or 4 floats):
// 16-byte loads into shared memory (the source rows start 16-byte aligned: a padded product's
// pitch does, and an unpadded one is only made for widths of 16-byte rows), then each thread
// converts (to float32, or not at all) the elements t, t + kThreads, ... so a warp's stores are
// contiguous. The destination rows of an odd width are not 16-byte aligned; stores of 8 adjacent
// floats per thread instead write every 32-byte sector in pieces from 8 instructions (tried:
// DistilGPT2 fp16 on an H100 went from 0.285 to 0.331 ms at b1 and from 2.21 to 3.52 ms at b32;
// 16-byte stores after a scalar head were slower too: 449 against 361 us at DistilGPT2 b32 on an
// H200, developer session 42). Both sides stream (evict-first): the scratch is dead once read,
// and the output (a model's logits, larger than L2) would otherwise push out the block's scratch
// rows not yet copied (DistilGPT2 b32: 292 MB of the scratch read back from DRAM, 145 MB
// streaming; the run 1.603 against 1.620 ms, session 42). cudaMemcpy2DAsync did the same-dtype
// copy before: with rows of an odd number of halves DistilGPT2 b32 with float16 logits took
// 1.789 ms against 1.578 with float32 ones, and 1.477 with this kernel (developer session 43).
template <class T, class O>
__global__ void __launch_bounds__(kThreads) copy_rows_kernel(const T* __restrict__ src, int64_t src_pitch,
                                                             O* __restrict__ y, int64_t y_pitch, int64_t rows,
                                                             int64_t cols) {
  constexpr int kPer = 16 / int(sizeof(T)), kSpan = kPer * kThreads;
  __shared__ uint4 stage[kThreads];
  const T* staged = reinterpret_cast<const T*>(stage);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* s = src + r * src_pitch;
    O* d = y + r * y_pitch;
    for (int64_t c0 = int64_t(blockIdx.x) * kSpan; c0 < cols; c0 += int64_t(gridDim.x) * kSpan) {
      const int64_t c = c0 + kPer * int64_t(threadIdx.x);
      // Within the pitch (a multiple of kPer, or 0).
      if (c < cols) stage[threadIdx.x] = __ldcs(reinterpret_cast<const uint4*>(s + c));
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int i = int(threadIdx.x) + k * kThreads;
        if (c0 + i < cols) {
          if constexpr (std::is_same_v<O, T>) __stcs(d + c0 + i, staged[i]);
          else __stcs(d + c0 + i, to_float(staged[i]));
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace

cudaError_t launch_copy_rows(const void* src, int64_t src_pitch, DType src_dtype, void* y, DType y_dtype,
                             int64_t y_pitch, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t per = 16 / int64_t(dtype_size(src_dtype));
  if ((src_dtype != DType::kFloat16 && src_dtype != DType::kBFloat16 && src_dtype != DType::kFloat32) ||
      src_pitch % per != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0 ||
      (y_dtype != DType::kFloat32 && y_dtype != src_dtype))
    return cudaErrorInvalidValue;
  const dim3 grid(unsigned(std::min<int64_t>((cols + kThreads * per - 1) / (kThreads * per), 1024)),
                  unsigned(std::min<int64_t>(rows, 65535)));  // rows beyond: grid-stride
  bool ok = dispatch_device_float(src_dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (sizeof(T) == 2 || std::is_same_v<T, float>) {
      if (y_dtype == src_dtype)
        copy_rows_kernel<T, T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(src), src_pitch,
                                                              static_cast<T*>(y), y_pitch, rows, cols);
      else if constexpr (sizeof(T) == 2)
        copy_rows_kernel<T, float><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(src), src_pitch,
                                                                  static_cast<float*>(y), y_pitch, rows, cols);
    }
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launch_broadcast_matrix(const void* c, int64_t row_stride, int64_t col_stride, float scale, void* y,
                                    int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  bool ok = dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    broadcast_matrix_kernel<T><<<blocks_for(rows * cols, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(c), row_stride, col_stride, scale, static_cast<T*>(y), rows, cols);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launch_activation_inplace(void* y, int64_t n, PointwiseActivation act, DType dtype, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bool ok = dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(y);
    switch (act) {
      case PointwiseActivation::kRelu: launch_activation<T, PointwiseActivation::kRelu>(p, n, stream); break;
      case PointwiseActivation::kGeluErf: launch_activation<T, PointwiseActivation::kGeluErf>(p, n, stream); break;
      case PointwiseActivation::kGeluTanh: launch_activation<T, PointwiseActivation::kGeluTanh>(p, n, stream); break;
      case PointwiseActivation::kTanh: launch_activation<T, PointwiseActivation::kTanh>(p, n, stream); break;
    }
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace ingot::cuda
