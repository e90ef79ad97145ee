// Where(condition, X, Y) with a three-way broadcast. It only moves elements, so it is
// instantiated per element size; the layout of work is the binary kernels' (V outputs of
// one row per thread, packed loads for operands with inner stride 1).
#include "backends/cuda/elementwise_device.cuh"

namespace ingot::cuda::ew {
namespace {

template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    where_kernel32(Geometry<uint32_t, 3> g, const bool* c, const T* x, const T* y, T* out) {
  const uint32_t i0 = (blockIdx.x * uint32_t(kThreads) + threadIdx.x) * uint32_t(V);
  if (i0 >= g.numel) return;
  uint32_t off[3];
  offsets(g, i0, off);
  if (V > 1 && i0 + V <= g.numel) {
    Pack<bool, V> pc;
    Pack<T, V> px, py, po;
    if (g.strides[0][0]) {
      pc = *reinterpret_cast<const Pack<bool, V>*>(c + off[0]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) pc.v[j] = c[off[0]];
    }
    if (g.strides[1][0]) {
      px = *reinterpret_cast<const Pack<T, V>*>(x + off[1]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) px.v[j] = x[off[1]];
    }
    if (g.strides[2][0]) {
      py = *reinterpret_cast<const Pack<T, V>*>(y + off[2]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) py.v[j] = y[off[2]];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) po.v[j] = pc.v[j] ? px.v[j] : py.v[j];
    *reinterpret_cast<Pack<T, V>*>(out + i0) = po;
    return;
  }
  const uint32_t end = g.numel - i0 < uint32_t(V) ? g.numel : i0 + uint32_t(V);
  for (uint32_t i = i0; i < end; ++i) {
    if (i != i0) offsets(g, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    where_kernel64(Geometry<int64_t, 3> g, const bool* c, const T* x, const T* y, T* out) {
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < g.numel; i += step) {
    int64_t off[3];
    offsets(g, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class T>
cudaError_t run_where(const bool* c, const void* x, const void* y, void* out, const Broadcast& br,
                      cudaStream_t stream) {
  const T* px = static_cast<const T*>(x);
  const T* py = static_cast<const T*>(y);
  T* po = static_cast<T*>(out);
  if (br.numel < (int64_t(1) << 31)) {
    const auto g = to_geometry<uint32_t, 3>(br);
    constexpr int V = pack_width<T>();
    const bool vec = (br.rank == 1 || br.dims[0] % V == 0) && aligned16(out) &&
                     (br.strides[0][0] == 0 || aligned16(c)) && (br.strides[1][0] == 0 || aligned16(x)) &&
                     (br.strides[2][0] == 0 || aligned16(y));
    if (vec) {
      const int64_t packs = (br.numel + V - 1) / V;
      where_kernel32<T, V><<<blocks_for(packs, kThreads, INT32_MAX), kThreads, 0, stream>>>(g, c, px, py, po);
    } else {
      where_kernel32<T, 1><<<blocks_for(br.numel, kThreads, INT32_MAX), kThreads, 0, stream>>>(g, c, px, py, po);
    }
  } else {
    const auto g = to_geometry<int64_t, 3>(br);
    where_kernel64<T><<<blocks_for(br.numel, kThreads), kThreads, 0, stream>>>(g, c, px, py, po);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_where(size_t elem_bytes, const bool* cond, const void* x, const void* y, void* out,
                         const Broadcast& g, cudaStream_t stream) {
  if (g.numel == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1: return run_where<uint8_t>(cond, x, y, out, g, stream);
    case 2: return run_where<uint16_t>(cond, x, y, out, g, stream);
    case 4: return run_where<uint32_t>(cond, x, y, out, g, stream);
    case 8: return run_where<uint64_t>(cond, x, y, out, g, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ingot::cuda::ew
