// ingot.EmbedLayerNorm on the GPU (see embed_layer_norm_impl.h). The row's sum s is written
// into Y in the tables' dtype — exactly the rounding the op's contract gives s — so the
// statistics passes read it back from L1/L2 instead of holding a long row in registers.
#include "backends/cuda/norm_common.cuh"
#include "backends/cuda/embed_layer_norm_impl.h"

namespace ingot::cuda {
namespace {

using norm::round_to;
using norm::warp_sum;

constexpr int kWarpsPerBlock = 8;

template <class T>
__global__ void embed_layer_norm_kernel(EmbedArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < a.rows; r += warps) {
    const T* src[kEmbedMaxLookups];
    for (int l = 0; l < kEmbedMaxLookups; ++l) {
      if (l >= a.lookups) {
        src[l] = nullptr;
        continue;
      }
      int64_t off = 0, rest = r;
      for (int d = kEmbedMaxRank - 1; d >= 0; --d) {
        off += (rest % a.dims[d]) * a.id_stride[l][d];
        rest /= a.dims[d];
      }
      int64_t id = a.ids64[l] ? static_cast<const int64_t*>(a.ids[l])[off] : static_cast<const int32_t*>(a.ids[l])[off];
      if (id < 0) id += a.rows_in_table[l];
      // Ids outside the table cannot be reported from here: the row reads as zeros.
      src[l] = id >= 0 && id < a.rows_in_table[l] ? static_cast<const T*>(a.table[l]) + id * a.hidden : nullptr;
    }
    T* yr = static_cast<T*>(a.y) + r * a.hidden;
    float total = 0.f;
    for (int64_t k = lane; k < a.hidden; k += 32) {
      auto term = [&](int l) { return src[l] ? to_float(src[l][k]) : 0.f; };
      float x = term(0), skip = term(a.x_terms);
      for (int l = 1; l < a.x_terms; ++l) x = round_to<T>(x + term(l));
      for (int l = a.x_terms + 1; l < a.lookups; ++l) skip = round_to<T>(skip + term(l));
      const T s = from_float<T>(x + skip);
      yr[k] = s;
      if (a.sum) static_cast<T*>(a.sum)[r * a.hidden + k] = s;
      total += to_float(s);
    }
    const float mean = warp_sum(total) / float(a.hidden);
    float sq = 0.f;
    for (int64_t k = lane; k < a.hidden; k += 32) {
      const float d = to_float(yr[k]) - mean;
      sq += d * d;
    }
    const float inv = rsqrtf(warp_sum(sq) / float(a.hidden) + a.epsilon);
    for (int64_t k = lane; k < a.hidden; k += 32) {
      const float v = (to_float(yr[k]) - mean) * inv * a.gamma[k] + (a.beta ? a.beta[k] : 0.f);
      yr[k] = from_float<T>(v);
    }
  }
}

}  // namespace

cudaError_t launch_embed_layer_norm(DType dtype, const EmbedArgs& args, cudaStream_t stream) {
  if (args.rows == 0 || args.hidden == 0) return cudaSuccess;
  const unsigned blocks = unsigned((args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock < 65535 * 8
                                       ? (args.rows + kWarpsPerBlock - 1) / kWarpsPerBlock
                                       : 65535 * 8);
  cudaError_t err = cudaErrorInvalidValue;
  dispatch_device_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    embed_layer_norm_kernel<T><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(args);
    err = cudaGetLastError();
  });
  return err;
}

}  // namespace ingot::cuda
