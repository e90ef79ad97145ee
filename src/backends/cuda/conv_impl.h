// Device helpers around the cuDNN convolution of Conv / ingot.FusedConv (conv.cu): layout
// transposes between NCHW and NHWC, and the epilogue y = act(conv + bias + z) for what cuDNN's
// fused call does not cover (activations other than Relu, a broadcast or differently laid out
// residual, an output in another layout than the convolution ran in).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"

namespace ingot::cuda {

// The activations of ingot.FusedConv (fused_conv::Act on the CPU), with their parameters.
enum class ConvAct : int32_t { kNone, kRelu, kLeakyRelu, kClip, kHardSwish, kHardSigmoid, kSigmoid };

struct ConvEpilogue {
  const void* bias = nullptr;  // [K] in the output's dtype, or null
  const void* z = nullptr;     // residual added before the activation, or null
  bool z_nhwc = false;         // Z stored as [N, H, W, K]
  int64_t zn = 0, zk = 0, zh = 0, zw = 0;  // Z's logical dims: each the output's or 1
  ConvAct act = ConvAct::kNone;
  float p0 = 0, p1 = 0;  // LeakyRelu: alpha; Clip: min, max; HardSigmoid: alpha, beta
};

// dst = act(src + bias + z) over an output of logical shape [n, k, h, w]; src and dst are each
// NCHW or NHWC (dst may be src when the layouts agree). float32/float16/bfloat16.
cudaError_t launch_conv_epilogue(DType dtype, const void* src, bool src_nhwc, void* dst, bool dst_nhwc, int64_t n,
                                 int64_t k, int64_t h, int64_t w, const ConvEpilogue& e, cudaStream_t stream);

// [batch][rows][cols] -> [batch][cols][rows]: NCHW -> NHWC with rows = C, cols = H*W (and a
// KCRS filter -> KRSC with batch = K, rows = C/group, cols = R*S).
cudaError_t launch_transpose_planes(DType dtype, const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
                                    cudaStream_t stream);

}  // namespace ingot::cuda
