// Window pooling (see pool_impl.h): one thread per output element, consecutive threads on
// consecutive output columns so the window reads of a warp overlap in L1. For ResNet's 3x3/2
// MaxPool each input element is read by at most 4 windows, all within a few cache lines.
#include <cmath>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/pool_impl.h"

namespace ingot::cuda {
namespace {

// I is the index type: 32-bit whenever every index fits (64-bit division and modulo cost tens
// of instructions each; with them ResNet-50's b32 MaxPool took ~10x its memory time).
template <class T, class I>
__global__ void pool_kernel(const T* x, T* y, PoolGeometry g, PoolMode mode, bool count_include_pad) {
  const I in0 = I(g.in[0]), in1 = I(g.in[1]), in2 = I(g.in[2]);
  const I out0 = I(g.out[0]), out1 = I(g.out[1]), out2 = I(g.out[2]);
  const I out_plane = out0 * out1 * out2, in_plane = in0 * in1 * in2;
  const I total = I(g.planes) * out_plane;
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    const I pl = i / out_plane, o = i - pl * out_plane;
    const I o01 = o / out2, o2 = o - o01 * out2;
    const I o0 = o01 / out1, o1 = o01 - o0 * out1;
    const I s0 = o0 * I(g.st[0]) - I(g.pb[0]), s1 = o1 * I(g.st[1]) - I(g.pb[1]), s2 = o2 * I(g.st[2]) - I(g.pb[2]);
    const T* xp = x + pl * in_plane;
    float best = -INFINITY, acc = 0.f;
    bool any = false;
    int cnt = 0, cnt_pad = 0;
    for (I e0 = 0; e0 < I(g.k[0]); ++e0) {
      const I c0 = s0 + e0 * I(g.dl[0]);
      const bool ok0 = c0 >= 0 && c0 < in0, pad0 = c0 >= -I(g.pb[0]) && c0 < in0 + I(g.pe[0]);
      for (I e1 = 0; e1 < I(g.k[1]); ++e1) {
        const I c1 = s1 + e1 * I(g.dl[1]);
        const bool ok1 = c1 >= 0 && c1 < in1, pad1 = c1 >= -I(g.pb[1]) && c1 < in1 + I(g.pe[1]);
        for (I e2 = 0; e2 < I(g.k[2]); ++e2) {
          const I c2 = s2 + e2 * I(g.dl[2]);
          const bool ok2 = c2 >= 0 && c2 < in2, pad2 = c2 >= -I(g.pb[2]) && c2 < in2 + I(g.pe[2]);
          cnt_pad += pad0 && pad1 && pad2;
          if (!(ok0 && ok1 && ok2)) continue;
          const float v = to_float(xp[(c0 * in1 + c1) * in2 + c2]);
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
      const int div = count_include_pad ? cnt_pad : cnt;
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
  const unsigned blocks = blocks_for(total, 256);
  const int64_t in_total = g.planes * g.in[0] * g.in[1] * g.in[2];
  // 32-bit indices when the largest index, plus one grid stride of overshoot, stays below 2^31.
  const bool narrow = total + int64_t(blocks) * 256 < (int64_t(1) << 31) && in_total < (int64_t(1) << 31);
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (narrow)
      pool_kernel<T, int32_t><<<blocks, 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), g, mode,
                                                           count_include_pad);
    else
      pool_kernel<T, int64_t><<<blocks, 256, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), g, mode,
                                                           count_include_pad);
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
