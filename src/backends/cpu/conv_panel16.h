// conv3x3_panel16: 2-D 3x3 convolutions on channels-last tensors with gemm_panel16's 6 x 16
// register tile, for CPUs with AVX2 and FMA but no AVX-512 (panel16_supported()), where
// oneDNN 2.6's jit:avx2 direct convolution runs ResNet-50's 3x3 layers at 89-107 GFLOP/s on two
// cores (developer session 43) and has no AVX2 Winograd.
#pragma once

#include <cstdint>
#include <vector>

namespace ingot::cpu {

// Logical NCHW geometry of one convolution (the tensors themselves are NHWC); 3x3 kernel, no
// dilation, one group.
struct Conv3x3Geometry {
  int64_t n = 1, h = 0, w = 0, ic = 0;  // X
  int64_t oh = 0, ow = 0, oc = 0;       // Y; oc a multiple of 16
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// W [OC, IC, 3, 3] as the kernel reads it: [OC / 16][9 · IC][16], K tap after tap (kh, kw), input
// channel within a tap; oc must be a multiple of 16.
std::vector<float> pack_conv3x3_weights(const float* w, int64_t oc, int64_t ic);

// Y[n, oh, ow, oc] = act(bias[oc] + Σ X[n, oh·sh - pt + kh, ow·sw - pl + kw, ic] · W[oc, ic, kh, kw])
// over the taps inside X (zero padding); act is ReLU when `relu`. `packed` from
// pack_conv3x3_weights; bias may be null. Threads over blocks of 6 output pixels.
void conv3x3_panel16(const Conv3x3Geometry& g, const float* x, const float* packed, const float* bias, bool relu,
                     float* y);

}  // namespace ingot::cpu
