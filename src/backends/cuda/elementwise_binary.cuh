// Broadcasting binary kernels (elementwise_binary.cu: arithmetic, elementwise_compare.cu:
// comparisons and logic). One thread produces V consecutive outputs of one row: an operand
// with inner stride 1 is read as one packed 16-byte word, one with inner stride 0 (scalar,
// row broadcast) as a single element; offsets come from one fast divmod per merged dim.
#pragma once

#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/elementwise_device.cuh"

namespace ingot::cuda::ew {

template <class Op, class TA, class TB, class TO>
__device__ __forceinline__ TO apply2(const Op& op, TA a, TB b) {
  return store_as<TO>(op(load_c(a), load_c(b)));
}

// Operand pointers are not __restrict__: Max/Min/Sum/Mean fold further inputs into the output
// in place (a == out).
template <class Op, class TA, class TB, class TO, int V>
__global__ void __launch_bounds__(kThreads)
    binary_kernel32(Op op, Geometry<uint32_t, 2> g, const TA* a, const TB* b, TO* out) {
  wait_prior_grids();
  allow_dependent_grids();
  const uint32_t i0 = (blockIdx.x * uint32_t(kThreads) + threadIdx.x) * uint32_t(V);
  if (i0 >= g.numel) return;
  uint32_t off[2];
  offsets(g, i0, off);
  if (V > 1 && i0 + V <= g.numel) {
    // The launcher chose V > 1 only when the inner dim is a multiple of V (or rank is 1):
    // these V outputs lie in one row, so each operand is V contiguous elements or one.
    Pack<TA, V> pa;
    Pack<TB, V> pb;
    Pack<TO, V> po;
    if (g.strides[0][0]) {
      pa = *reinterpret_cast<const Pack<TA, V>*>(a + off[0]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) pa.v[j] = a[off[0]];
    }
    if (g.strides[1][0]) {
      pb = *reinterpret_cast<const Pack<TB, V>*>(b + off[1]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) pb.v[j] = b[off[1]];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) po.v[j] = apply2<Op, TA, TB, TO>(op, pa.v[j], pb.v[j]);
    *reinterpret_cast<Pack<TO, V>*>(out + i0) = po;
    return;
  }
  // Scalar path, or the tail of a 1-D run whose length is not a multiple of V.
  const uint32_t end = g.numel - i0 < uint32_t(V) ? g.numel : i0 + uint32_t(V);
  for (uint32_t i = i0; i < end; ++i) {
    if (i != i0) offsets(g, i, off);
    out[i] = apply2<Op, TA, TB, TO>(op, a[off[0]], b[off[1]]);
  }
}

// Tensors of 2^31 elements or more: 64-bit index math, one element per iteration.
template <class Op, class TA, class TB, class TO>
__global__ void __launch_bounds__(kThreads)
    binary_kernel64(Op op, Geometry<int64_t, 2> g, const TA* a, const TB* b, TO* out) {
  wait_prior_grids();
  allow_dependent_grids();
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < g.numel; i += step) {
    int64_t off[2];
    offsets(g, i, off);
    out[i] = apply2<Op, TA, TB, TO>(op, a[off[0]], b[off[1]]);
  }
}

template <class Op, class TA, class TB, class TO>
cudaError_t run_binary(const Op& op, const void* a, const void* b, void* out, const Broadcast& br,
                       cudaStream_t stream) {
  if (br.numel == 0) return cudaSuccess;
  const TA* pa = static_cast<const TA*>(a);
  const TB* pb = static_cast<const TB*>(b);
  TO* po = static_cast<TO*>(out);
  if (br.numel < (int64_t(1) << 31)) {
    const auto g = to_geometry<uint32_t, 2>(br);
    constexpr int V = pack_width<TA, TB, TO>();
    const bool vec = V > 1 && (br.rank == 1 || br.dims[0] % V == 0) && aligned16(out) &&
                     (br.strides[0][0] == 0 || aligned16(a)) && (br.strides[1][0] == 0 || aligned16(b));
    if (vec) {
      const int64_t packs = (br.numel + V - 1) / V;
      return launch_dependent(binary_kernel32<Op, TA, TB, TO, V>, blocks_for(packs, kThreads, INT32_MAX), kThreads, 0,
                              stream, op, g, pa, pb, po);
    }
    return launch_dependent(binary_kernel32<Op, TA, TB, TO, 1>, blocks_for(br.numel, kThreads, INT32_MAX), kThreads, 0,
                            stream, op, g, pa, pb, po);
  }
  const auto g = to_geometry<int64_t, 2>(br);
  return launch_dependent(binary_kernel64<Op, TA, TB, TO>, blocks_for(br.numel, kThreads), kThreads, 0, stream, op, g,
                          pa, pb, po);
}

// Runs op over same-dtype operands of dtype t when t is in Op::kSet; cudaErrorInvalidValue
// otherwise (the kernel classes never ask for that).
template <class Op>
cudaError_t run_same_type(const Op& op, DType t, const void* a, const void* b, void* out, const Broadcast& br,
                          cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_dev_all(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (in_set<T>(Op::kSet)) {
      using TO = std::conditional_t<Op::kBoolOut, bool, T>;
      e = run_binary<Op, T, T, TO>(op, a, b, out, br, stream);
    }
  });
  return e;
}

// The comparison and logic half of launch_binary (elementwise_compare.cu).
cudaError_t launch_compare(BinaryOp op, DType t, const void* a, const void* b, void* out, const Broadcast& g,
                           cudaStream_t stream);

}  // namespace ingot::cuda::ew
