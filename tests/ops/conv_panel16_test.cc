// conv_panel16 (1x1 and 3x3 convolutions between channels-last tensors on gemm_panel16's tile,
// for CPUs with AVX2 and no AVX-512) against a double-precision reference on random inputs:
// strides 1 and 2, padding or none, a batch of two, output pixel counts that leave the last
// 6-pixel block partial, input channels that are not a multiple of 8, several 16-channel panels,
// with and without bias, residual (also in Y's own buffer) and ReLU; nothing written past Y. It runs on any AVX2 CPU; the
// ResNet fixtures cover the FusedConv path that calls it on CPUs where it is chosen.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/conv_panel16.h"
#include "op_test_util.h"

namespace ingot::testing {
namespace {

std::vector<float> reference(const cpu::ConvGeometry& g, const float* x, const float* w, const float* bias,
                             const float* z, bool relu) {
  std::vector<float> y(size_t(g.n * g.oh * g.ow * g.oc));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow)
        for (int64_t oc = 0; oc < g.oc; ++oc) {
          const size_t at = size_t(((n * g.oh + oh) * g.ow + ow) * g.oc + oc);
          double s = (bias ? bias[oc] : 0.0) + (z ? z[at] : 0.0);
          for (int64_t kh = 0; kh < g.kh; ++kh)
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const int64_t ih = oh * g.stride_h - g.pad_top + kh, iw = ow * g.stride_w - g.pad_left + kw;
              if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
              for (int64_t ic = 0; ic < g.ic; ++ic)
                s += double(x[((n * g.h + ih) * g.w + iw) * g.ic + ic]) * w[((oc * g.ic + ic) * g.kh + kh) * g.kw + kw];
            }
          y[at] = float(relu && s < 0 ? 0.0 : s);
        }
  return y;
}

TEST(ConvPanel16, MatchesReference) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  struct Case {
    int64_t k, n, h, w, ic, oc, stride, pad;
  };
  const std::vector<Case> cases = {{3, 1, 8, 8, 16, 16, 1, 1}, {3, 2, 7, 9, 5, 32, 1, 1}, {3, 1, 9, 7, 3, 48, 2, 1},
                                   {3, 1, 3, 3, 24, 16, 1, 0}, {3, 1, 14, 14, 64, 64, 2, 1}, {3, 1, 5, 6, 1, 16, 1, 1},
                                   {3, 2, 4, 4, 40, 32, 2, 0}, {1, 1, 7, 7, 64, 32, 1, 0},  {1, 2, 5, 3, 7, 48, 1, 0},
                                   {1, 1, 8, 8, 16, 32, 2, 0}};
  uint32_t seed = 900;
  for (const Case& c : cases) {
    cpu::ConvGeometry g;
    g.kh = g.kw = c.k;
    g.n = c.n, g.h = c.h, g.w = c.w, g.ic = c.ic, g.oc = c.oc;
    g.stride_h = g.stride_w = c.stride, g.pad_top = g.pad_left = c.pad;
    g.oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, g.ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    Tensor x = random_tensor({c.n, c.h, c.w, c.ic}, seed++);
    Tensor w = random_tensor({c.oc, c.ic, c.k, c.k}, seed++);
    Tensor bias = random_tensor({c.oc}, seed++);
    Tensor z = random_tensor({c.n, g.oh, g.ow, c.oc}, seed++);
    const std::vector<float> packed = cpu::pack_conv_weights(w.data<float>(), c.oc, c.ic, c.k * c.k);
    for (int residual = 0; residual < 3; ++residual)  // none, Z apart, Z in Y's buffer
      for (bool relu : {false, true})
        for (bool with_bias : {false, true}) {
          const float* b = with_bias ? bias.data<float>() : nullptr;
          const std::string where = std::to_string(c.k) + "x" + std::to_string(c.k) + " n" + std::to_string(c.n) + " " +
                                    std::to_string(c.h) + "x" + std::to_string(c.w) + " ic" + std::to_string(c.ic) +
                                    " oc" + std::to_string(c.oc) + " stride " + std::to_string(c.stride) + " pad " +
                                    std::to_string(c.pad) + " residual " + std::to_string(residual) +
                                    (relu ? " relu" : "") + (with_bias ? " bias" : "");
          const std::vector<float> want =
              reference(g, x.data<float>(), w.data<float>(), b, residual ? z.data<float>() : nullptr, relu);
          std::vector<float> got(want.size() + 16, 1234.5f);
          const float* zp = nullptr;
          if (residual == 1) zp = z.data<float>();
          if (residual == 2) std::copy(z.data<float>(), z.data<float>() + want.size(), got.begin()), zp = got.data();
          cpu::conv_panel16(g, x.data<float>(), packed.data(), b, zp, relu, got.data());
          for (size_t i = want.size(); i < got.size(); ++i) EXPECT_EQ(got[i], 1234.5f) << where << ": wrote past Y";
          double worst = 0;
          for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
          EXPECT_LE(worst, 1e-5 * std::sqrt(double(c.k * c.k * c.ic)) + 2e-6) << where;
        }
  }
}

}  // namespace
}  // namespace ingot::testing
