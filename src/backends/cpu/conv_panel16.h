// conv_panel16: 2-D 1x1 and 3x3 convolutions on channels-last tensors with gemm_panel16's 6 x 16
// register tile, for CPUs with AVX2 and FMA but no AVX-512 (panel16_supported()), where
// oneDNN 2.6's jit:avx2 direct convolution runs ResNet-50's 3x3 layers at 89-107 GFLOP/s on two
// cores (developer session 43) and has no AVX2 Winograd. FusedConv runs its 3x3 convolutions
// here; 1x1 ones measured faster in oneDNN's jit_1x1:avx2.
#pragma once

#include <cstdint>
#include <vector>

namespace ingot::cpu {

// Logical NCHW geometry of one convolution (the tensors themselves are NHWC); a 1x1 or 3x3
// kernel, no dilation, one group.
struct ConvGeometry {
  int64_t n = 1, h = 0, w = 0, ic = 0;  // X
  int64_t oh = 0, ow = 0, oc = 0;       // Y; oc a multiple of 16
  int64_t kh = 3, kw = 3;               // 1 or 3 each
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// W [OC, IC, KH, KW] (taps = KH · KW) as the kernel reads it: [OC / 16][taps · IC][16], K tap after
// tap, input channel within a tap; oc must be a multiple of 16.
std::vector<float> pack_conv_weights(const float* w, int64_t oc, int64_t ic, int64_t taps);

// Y[n, oh, ow, oc] = act(bias[oc] + Σ X[n, oh·sh - pt + i, ow·sw - pl + j, ic] · W[oc, ic, i, j]
// + Z[n, oh, ow, oc]) over the taps inside X (zero padding); act is ReLU when `relu`. `packed`
// from pack_conv_weights; bias and z (Y's shape, channels-last; it may be Y itself) may be null;
// X must not overlap Y. Threads over blocks of 6 output pixels.
void conv_panel16(const ConvGeometry& g, const float* x, const float* packed, const float* bias, const float* z,
                  bool relu, float* y);

}  // namespace ingot::cpu
