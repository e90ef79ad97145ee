// Window pooling (see pool_impl.h): one thread per output element, consecutive threads on
// consecutive output columns so the window reads of a warp overlap in L1. For ResNet's 3x3/2
// MaxPool each input element is read by at most 4 windows, all within a few cache lines.
#include <cmath>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/pool_impl.h"

namespace ingot::cuda {
namespace {

template <class T>
__global__ void pool_kernel(const T* x, T* y, PoolGeometry g, PoolMode mode, bool count_include_pad) {
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2], in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t total = g.planes * out_plane;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pl = i / out_plane, o = i % out_plane;
    const int64_t o2 = o % g.out[2], o1 = (o / g.out[2]) % g.out[1], o0 = o / (g.out[2] * g.out[1]);
    const int64_t s0 = o0 * g.st[0] - g.pb[0], s1 = o1 * g.st[1] - g.pb[1], s2 = o2 * g.st[2] - g.pb[2];
    const T* xp = x + pl * in_plane;
    float best = -INFINITY, acc = 0.f;
    bool any = false;
    int64_t cnt = 0, cnt_pad = 0;
    for (int64_t e0 = 0; e0 < g.k[0]; ++e0) {
      const int64_t c0 = s0 + e0 * g.dl[0];
      const bool in0 = c0 >= 0 && c0 < g.in[0], pad0 = c0 >= -g.pb[0] && c0 < g.in[0] + g.pe[0];
      for (int64_t e1 = 0; e1 < g.k[1]; ++e1) {
        const int64_t c1 = s1 + e1 * g.dl[1];
        const bool in1 = c1 >= 0 && c1 < g.in[1], pad1 = c1 >= -g.pb[1] && c1 < g.in[1] + g.pe[1];
        for (int64_t e2 = 0; e2 < g.k[2]; ++e2) {
          const int64_t c2 = s2 + e2 * g.dl[2];
          const bool in2 = c2 >= 0 && c2 < g.in[2], pad2 = c2 >= -g.pb[2] && c2 < g.in[2] + g.pe[2];
          cnt_pad += pad0 && pad1 && pad2;
          if (!(in0 && in1 && in2)) continue;
          const float v = to_float(xp[(c0 * g.in[1] + c1) * g.in[2] + c2]);
          if (mode == PoolMode::kMax) {
            if (!any || v > best || (isnan(v) && !isnan(best))) best = v;
            any = true;
          } else {
            acc += v;
            ++cnt;
          }
        }
      }
    }
    float r = best;
    if (mode == PoolMode::kAvg) {
      const int64_t div = count_include_pad ? cnt_pad : cnt;
      r = div ? acc / float(div) : 0.f;
    }
    y[i] = from_float<T>(r);
  }
}

}  // namespace

cudaError_t launch_pool(DType dtype, PoolMode mode, bool count_include_pad, const PoolGeometry& g, const void* x,
                        void* y, cudaStream_t stream) {
  const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return cudaSuccess;
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    pool_kernel<T><<<blocks_for(total, 256), 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), g, mode,
                                                               count_include_pad);
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
