// DeformConv (opset 19): with zero offsets and no mask it is Conv (checked against ingot's Conv);
// with random offsets and masks against a direct reference of the ONNX definition.
#include <cmath>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

struct DeformCase {
  int64_t n, c, h, w, oc, kh, kw, group, offset_group;
  std::vector<int64_t> strides, dilations, pads;  // 2, 2, 4 entries
  bool bias, mask;
};

Attributes deform_attrs(const DeformCase& d) {
  Attributes a;
  a.set("strides", ints_attr(d.strides));
  a.set("dilations", ints_attr(d.dilations));
  a.set("pads", ints_attr(d.pads));
  a.set("group", int_attr(d.group));
  if (d.offset_group != 1) a.set("offset_group", int_attr(d.offset_group));
  return a;
}

// [N, offset_group·kH·kW·2, oH, oW] for the case's geometry.
Shape offset_shape(const DeformCase& d) {
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t dl, int64_t p0, int64_t p1) { return (in + p0 + p1 - (dl * (k - 1) + 1)) / s + 1; };
  return {d.n, d.offset_group * d.kh * d.kw * 2, out(d.h, d.kh, d.strides[0], d.dilations[0], d.pads[0], d.pads[2]),
          out(d.w, d.kw, d.strides[1], d.dilations[1], d.pads[1], d.pads[3])};
}

double sample(const Tensor& x, int64_t n, int64_t c, double h, double w) {
  const int64_t H = x.dim(2), W = x.dim(3);
  double v = 0;
  const int64_t h0 = int64_t(std::floor(h)), w0 = int64_t(std::floor(w));
  for (int64_t r : {h0, h0 + 1})
    for (int64_t q : {w0, w0 + 1}) {
      if (r < 0 || r >= H || q < 0 || q >= W) continue;
      v += (1 - std::fabs(h - double(r))) * (1 - std::fabs(w - double(q))) * x.data<float>()[((n * x.dim(1) + c) * H + r) * W + q];
    }
  return v;
}

Tensor reference(const DeformCase& d, const Tensor& x, const Tensor& wt, const Tensor& off, const Tensor* b, const Tensor* m) {
  const int64_t oh = off.dim(2), ow = off.dim(3), cg = d.c / d.group, ocg = d.oc / d.group, cpo = d.c / d.offset_group;
  Tensor y(DType::kFloat32, {d.n, d.oc, oh, ow});
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b ? b->data<float>()[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = o / ocg * cg + ci, og = c / cpo;
            for (int64_t kh = 0; kh < d.kh; ++kh)
              for (int64_t kw = 0; kw < d.kw; ++kw) {
                const int64_t ch = ((og * d.kh + kh) * d.kw + kw) * 2;
                auto at = [&](const Tensor& t, int64_t chan) { return double(t.data<float>()[((n * t.dim(1) + chan) * oh + i) * ow + j]); };
                const double h = double(i * d.strides[0] - d.pads[0] + kh * d.dilations[0]) + at(off, ch);
                const double w = double(j * d.strides[1] - d.pads[1] + kw * d.dilations[1]) + at(off, ch + 1);
                double v = sample(x, n, c, h, w) * wt.data<float>()[((o * cg + ci) * d.kh + kh) * d.kw + kw];
                if (m) v *= at(*m, (og * d.kh + kh) * d.kw + kw);
                acc += v;
              }
          }
          y.data<float>()[((n * d.oc + o) * oh + i) * ow + j] = float(acc);
        }
  return y;
}

const std::vector<DeformCase> kCases = {
    {1, 3, 6, 7, 4, 3, 3, 1, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
    {2, 4, 8, 6, 6, 3, 2, 2, 2, {2, 1}, {1, 2}, {0, 1, 2, 0}, true, true},
    {1, 6, 5, 5, 3, 2, 2, 3, 3, {1, 2}, {2, 1}, {1, 0, 0, 1}, false, true},
};

TEST(DeformConv, ZeroOffsetsAreConv) {
  for (size_t ci = 0; ci < kCases.size(); ++ci) {
    const DeformCase& d = kCases[ci];
    Tensor x = random_tensor({d.n, d.c, d.h, d.w}, 1), wt = random_tensor({d.oc, d.c / d.group, d.kh, d.kw}, 2),
           b = random_tensor({d.oc}, 3);
    Tensor off = random_tensor(offset_shape(d), 4, 0.f, 0.f);
    Attributes a = deform_attrs(d);
    auto deform = run_single_node("DeformConv", {x, wt, off, b}, 1, a, 19);
    Attributes ca;
    ca.set("strides", ints_attr(d.strides));
    ca.set("dilations", ints_attr(d.dilations));
    ca.set("pads", ints_attr(d.pads));
    ca.set("group", int_attr(d.group));
    auto conv = run_single_node("Conv", {x, wt, b}, 1, ca);
    ASSERT_EQ(deform[0].shape(), conv[0].shape()) << "case " << ci;
    for (int64_t i = 0; i < conv[0].numel(); ++i)
      ASSERT_NEAR(deform[0].data<float>()[i], conv[0].data<float>()[i], 1e-5f) << "case " << ci << " at " << i;
  }
}

TEST(DeformConv, OffsetsAndMasksAgainstReference) {
  for (size_t ci = 0; ci < kCases.size(); ++ci) {
    const DeformCase& d = kCases[ci];
    Tensor x = random_tensor({d.n, d.c, d.h, d.w}, 11), wt = random_tensor({d.oc, d.c / d.group, d.kh, d.kw}, 12),
           b = random_tensor({d.oc}, 13);
    // Offsets up to 2.5 pixels either way: some taps land between pixels, some off the image.
    const Shape os = offset_shape(d);
    Tensor off = random_tensor(os, 14, -2.5f, 2.5f);
    Tensor m = random_tensor({os[0], os[1] / 2, os[2], os[3]}, 15, 0.f, 1.f);
    // The one-node harness cannot leave B out before the mask: a case without bias passes zeros.
    Tensor zeros = random_tensor({d.oc}, 16, 0.f, 0.f);
    std::vector<Tensor> in = {x, wt, off};
    if (d.bias || d.mask) in.push_back(d.bias ? b : zeros);
    if (d.mask) in.push_back(m);
    auto out = run_single_node("DeformConv", in, 1, deform_attrs(d), 19);
    ASSERT_EQ(out.size(), 1u);
    Tensor ref = reference(d, x, wt, off, d.bias ? &b : nullptr, d.mask ? &m : nullptr);
    ASSERT_EQ(out[0].shape(), ref.shape());
    for (int64_t i = 0; i < ref.numel(); ++i)
      ASSERT_NEAR(out[0].data<float>()[i], ref.data<float>()[i], 2e-5f) << "case " << ci << " at " << i;
  }
}

TEST(DeformConv, Errors) {
  Tensor x = random_tensor({1, 2, 5, 5}, 1), wt = random_tensor({2, 2, 3, 3}, 2);
  Tensor off = random_tensor({1, 18, 3, 3}, 3);
  EXPECT_NE(run_error("DeformConv", {x, wt, random_tensor({1, 18, 2, 3}, 3)}, 1, {}, 19).find("has shape 1x18x2x3; expected 1x18x3x3"),
            std::string::npos);
  EXPECT_NE(run_error("DeformConv", {random_tensor({1, 2, 5, 5, 5}, 1), wt, off}, 1, {}, 19).find("2-D images"), std::string::npos);
  Attributes og;
  og.set("offset_group", int_attr(3));
  EXPECT_NE(run_error("DeformConv", {x, wt, off}, 1, og, 19).find("not divisible by offset_group 3"), std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
