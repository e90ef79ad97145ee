// Tests for the normalisation, softmax, resize, einsum and spatial sampling kernels: random
// inputs against plain reference loops, plus bad inputs checked by their messages.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

Tensor i64(Shape shape, std::vector<int64_t> v) {
  Tensor t(DType::kInt64, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

Tensor f32(Shape shape, std::vector<float> v) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

Attribute str_attr(const std::string& s) { return string_attr(s); }

// ----------------------------------------------------------------------------- softmax family

TEST(NnOps, SoftmaxAxisMiddle) {
  Tensor x = random_tensor({3, 4, 5}, 1, -3, 3);
  Attributes a;
  a.set("axis", int_attr(1));
  auto out = run_single_node("Softmax", {x}, 1, a, 13);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, {3, 4, 5});
  const float* p = x.data<float>();
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) {
      double mx = -1e30, s = 0;
      for (int j = 0; j < 4; ++j) mx = std::max(mx, double(p[(i * 4 + j) * 5 + k]));
      for (int j = 0; j < 4; ++j) s += std::exp(p[(i * 4 + j) * 5 + k] - mx);
      for (int j = 0; j < 4; ++j) ref.data<float>()[(i * 4 + j) * 5 + k] = float(std::exp(p[(i * 4 + j) * 5 + k] - mx) / s);
    }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-6);
}

TEST(NnOps, LogSoftmaxLegacyFlattens) {
  // opset 11: axis=1 flattens [2, 3, 4] into [2, 12] rows.
  Tensor x = random_tensor({2, 3, 4}, 2, -5, 5);
  Attributes a;
  a.set("axis", int_attr(1));
  auto out = run_single_node("LogSoftmax", {x}, 1, a, 11);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, {2, 3, 4});
  for (int i = 0; i < 2; ++i) {
    const float* p = x.data<float>() + i * 12;
    double mx = -1e30, s = 0;
    for (int j = 0; j < 12; ++j) mx = std::max(mx, double(p[j]));
    for (int j = 0; j < 12; ++j) s += std::exp(p[j] - mx);
    for (int j = 0; j < 12; ++j) ref.data<float>()[i * 12 + j] = float(p[j] - mx - std::log(s));
  }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);
}

TEST(NnOps, HardmaxFirstMax) {
  Tensor x = f32({2, 3}, {1, 3, 3, -1, -2, -3});
  auto out = run_single_node("Hardmax", {x}, 1, {}, 13);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref = f32({2, 3}, {0, 1, 0, 1, 0, 0});
  EXPECT_EQ(max_abs_diff(out[0], ref), 0);
}

TEST(NnOps, SoftmaxBadAxis) {
  Attributes a;
  a.set("axis", int_attr(3));
  std::string m = run_error("Softmax", {random_tensor({2, 3}, 3)}, 1, a, 13);
  EXPECT_NE(m.find("axis"), std::string::npos) << m;
}

// ----------------------------------------------------------------------------- normalisation

TEST(NnOps, LayerNormWithStats) {
  Tensor x = random_tensor({2, 3, 8}, 4, -2, 2);
  Tensor scale = random_tensor({8}, 5), bias = random_tensor({8}, 6);
  Attributes a;
  a.set("epsilon", float_attr(1e-3f));
  auto out = run_single_node("LayerNormalization", {x, scale, bias}, 3, a, 17);
  ASSERT_EQ(out.size(), 3u);
  Tensor ref(DType::kFloat32, {2, 3, 8}), mean(DType::kFloat32, {2, 3, 1}), inv(DType::kFloat32, {2, 3, 1});
  for (int r = 0; r < 6; ++r) {
    const float* p = x.data<float>() + r * 8;
    double m = 0, v = 0;
    for (int k = 0; k < 8; ++k) m += p[k];
    m /= 8;
    for (int k = 0; k < 8; ++k) v += (p[k] - m) * (p[k] - m);
    v /= 8;
    double is = 1 / std::sqrt(v + 1e-3);
    mean.data<float>()[r] = float(m);
    inv.data<float>()[r] = float(is);
    for (int k = 0; k < 8; ++k)
      ref.data<float>()[r * 8 + k] = float((p[k] - m) * is * scale.data<float>()[k] + bias.data<float>()[k]);
  }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);
  EXPECT_LT(max_abs_diff(out[1], mean), 1e-6);
  EXPECT_LT(max_abs_diff(out[2], inv), 1e-4);
}

TEST(NnOps, LayerNormBadScale) {
  std::string m = run_error("LayerNormalization", {random_tensor({2, 768}, 1), random_tensor({64}, 2)}, 1, {}, 17);
  EXPECT_NE(m.find("input 1 (Scale) has shape 64, expected 768 (the normalized dims of X)"), std::string::npos) << m;
}

TEST(NnOps, BatchNormInference) {
  Tensor x = random_tensor({2, 3, 4, 5}, 7);
  Tensor s = random_tensor({3}, 8), b = random_tensor({3}, 9), mu = random_tensor({3}, 10);
  Tensor var = random_tensor({3}, 11, 0.5f, 2.0f);
  auto out = run_single_node("BatchNormalization", {x, s, b, mu, var}, 1, {}, 15);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int c = int((i / 20) % 3);
    ref.data<float>()[i] = float((x.data<float>()[i] - mu.data<float>()[c]) / std::sqrt(var.data<float>()[c] + 1e-5) *
                                     s.data<float>()[c] + b.data<float>()[c]);
  }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);
}

TEST(NnOps, BatchNormBadMeanShape) {
  Tensor x = random_tensor({2, 3, 4}, 7);
  std::string m = run_error("BatchNormalization",
                            {x, random_tensor({3}, 1), random_tensor({3}, 2), random_tensor({4}, 3), random_tensor({3}, 4)},
                            1, {}, 15);
  EXPECT_NE(m.find("input 3 (input_mean) has shape 4, expected 3"), std::string::npos) << m;
}

TEST(NnOps, InstanceAndGroupNorm) {
  Tensor x = random_tensor({2, 4, 3, 3}, 12);
  Tensor s4 = random_tensor({4}, 13), b4 = random_tensor({4}, 14);
  auto ref_norm = [&](int groups, const std::vector<float>& sc, const std::vector<float>& bi) {
    Tensor r(DType::kFloat32, x.shape());
    int cpg = 4 / groups;
    int64_t blk = cpg * 9;
    for (int n = 0; n < 2; ++n)
      for (int g = 0; g < groups; ++g) {
        const float* p = x.data<float>() + (n * 4 + g * cpg) * 9;
        double m = 0, v = 0;
        for (int64_t k = 0; k < blk; ++k) m += p[k];
        m /= double(blk);
        for (int64_t k = 0; k < blk; ++k) v += (p[k] - m) * (p[k] - m);
        v /= double(blk);
        for (int64_t k = 0; k < blk; ++k) {
          int c = g * cpg + int(k / 9);
          r.data<float>()[(n * 4 + g * cpg) * 9 + k] = float((p[k] - m) / std::sqrt(v + 1e-5) * sc[size_t(c)] + bi[size_t(c)]);
        }
      }
    return r;
  };
  std::vector<float> sv(s4.data<float>(), s4.data<float>() + 4), bv(b4.data<float>(), b4.data<float>() + 4);
  auto inst = run_single_node("InstanceNormalization", {x, s4, b4}, 1, {}, 17);
  ASSERT_EQ(inst.size(), 1u);
  EXPECT_LT(max_abs_diff(inst[0], ref_norm(4, sv, bv)), 1e-5);
  // opset 21: per-channel scale/bias; opset 18: per-group.
  Attributes a;
  a.set("num_groups", int_attr(2));
  auto g21 = run_single_node("GroupNormalization", {x, s4, b4}, 1, a, 21);
  ASSERT_EQ(g21.size(), 1u);
  EXPECT_LT(max_abs_diff(g21[0], ref_norm(2, sv, bv)), 1e-5);
  Tensor s2 = f32({2}, {0.5f, 2.0f}), b2 = f32({2}, {1.0f, -1.0f});
  auto g18 = run_single_node("GroupNormalization", {x, s2, b2}, 1, a, 18);
  ASSERT_EQ(g18.size(), 1u);
  EXPECT_LT(max_abs_diff(g18[0], ref_norm(2, {0.5f, 0.5f, 2.0f, 2.0f}, {1, 1, -1, -1})), 1e-5);
  std::string m = run_error("GroupNormalization", {x, s2, b2}, 1, a, 21);
  EXPECT_NE(m.find("input 1 (scale) has shape 2, expected 4"), std::string::npos) << m;
}

TEST(NnOps, MeanVarianceNormalization) {
  Tensor x = random_tensor({2, 3, 2, 2}, 15);
  auto out = run_single_node("MeanVarianceNormalization", {x}, 1, {}, 13);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, x.shape());
  for (int c = 0; c < 3; ++c) {
    double m = 0, sq = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k) { double v = x.data<float>()[(n * 3 + c) * 4 + k]; m += v; sq += v * v; }
    m /= 8;
    double sd = std::sqrt(sq / 8 - m * m);
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k) {
        int64_t i = (n * 3 + c) * 4 + k;
        ref.data<float>()[i] = float((x.data<float>()[i] - m) / (sd + 1e-9));
      }
  }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);
}

TEST(NnOps, Lrn) {
  Tensor x = random_tensor({1, 5, 2, 2}, 16);
  Attributes a;
  a.set("size", int_attr(3));
  a.set("alpha", float_attr(0.1f));
  auto out = run_single_node("LRN", {x}, 1, a, 13);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, x.shape());
  for (int c = 0; c < 5; ++c)
    for (int k = 0; k < 4; ++k) {
      double s = 0;
      for (int cc = std::max(0, c - 1); cc <= std::min(4, c + 1); ++cc) s += std::pow(x.data<float>()[cc * 4 + k], 2);
      ref.data<float>()[c * 4 + k] = float(x.data<float>()[c * 4 + k] / std::pow(1.0 + 0.1 / 3 * s, 0.75));
    }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-6);
}

// ----------------------------------------------------------------------------- resize

TEST(NnOps, ResizeLinearHalfPixel) {
  Tensor x = random_tensor({1, 2, 3, 4}, 17);
  Tensor scales = f32({4}, {1, 1, 2, 1.5f});
  Attributes a;
  a.set("mode", str_attr("linear"));
  Tensor roi(DType::kFloat32, {0});
  auto out = run_single_node("Resize", {x, roi, scales}, 1, a, 13);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 6, 6}));
  auto coord = [](int o, double s, int in, int* i0, int* i1, double* w) {
    double xo = (o + 0.5) / s - 0.5;
    xo = std::max(0.0, std::min(xo, double(in - 1)));
    *i0 = int(std::floor(xo));
    *i1 = std::min(*i0 + 1, in - 1);
    *w = xo - *i0;
  };
  Tensor ref(DType::kFloat32, {1, 2, 6, 6});
  for (int c = 0; c < 2; ++c)
    for (int oy = 0; oy < 6; ++oy)
      for (int ox = 0; ox < 6; ++ox) {
        int y0, y1, x0, x1;
        double wy, wx;
        coord(oy, 2.0, 3, &y0, &y1, &wy);
        coord(ox, double(1.5f), 4, &x0, &x1, &wx);
        const float* p = x.data<float>() + c * 12;
        double v = (1 - wy) * ((1 - wx) * p[y0 * 4 + x0] + wx * p[y0 * 4 + x1]) +
                   wy * ((1 - wx) * p[y1 * 4 + x0] + wx * p[y1 * 4 + x1]);
        ref.data<float>()[(c * 6 + oy) * 6 + ox] = float(v);
      }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);
}

TEST(NnOps, ResizeNearestSizesAndErrors) {
  Tensor x = random_tensor({1, 1, 2, 2}, 18);
  Tensor roi(DType::kFloat32, {0}), no_scales(DType::kFloat32, {0});
  auto out = run_single_node("Resize", {x, roi, no_scales, i64({4}, {1, 1, 4, 4})}, 1, {}, 13);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 4, 4}));
  for (int y = 0; y < 4; ++y)
    for (int xx = 0; xx < 4; ++xx) EXPECT_EQ(out[0].data<float>()[y * 4 + xx], x.data<float>()[(y / 2) * 2 + xx / 2]);
  std::string m = run_error("Resize", {x, roi, f32({4}, {1, 1, 2, 2}), i64({4}, {1, 1, 4, 4})}, 1, {}, 13);
  EXPECT_NE(m.find("both given"), std::string::npos) << m;
  m = run_error("Resize", {x, roi, f32({3}, {1, 2, 2})}, 1, {}, 13);
  EXPECT_NE(m.find("scales has 3 values, expected 4"), std::string::npos) << m;
  Attributes bad;
  bad.set("mode", str_attr("quadratic"));
  m = run_error("Resize", {x, roi, f32({4}, {1, 1, 2, 2})}, 1, bad, 13);
  EXPECT_NE(m.find("attribute mode is 'quadratic'"), std::string::npos) << m;
}

TEST(NnOps, UpsampleNearest) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = run_single_node("Upsample", {x, f32({4}, {1, 1, 2, 3})}, 1, {}, 9);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(out[0].data<float>()[0], 1);
  EXPECT_EQ(out[0].data<float>()[3], 2);
  EXPECT_EQ(out[0].data<float>()[23], 4);
}

// ----------------------------------------------------------------------------- einsum

TEST(NnOps, EinsumBatchMatmulAndDiagonal) {
  Tensor a = random_tensor({2, 3, 4}, 19), b = random_tensor({2, 4, 5}, 20);
  Attributes at;
  at.set("equation", str_attr("bij,bjk->bik"));
  auto out = run_single_node("Einsum", {a, b}, 1, at, 12);
  ASSERT_EQ(out.size(), 1u);
  Tensor ref(DType::kFloat32, {2, 3, 5});
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += a.data<float>()[(n * 3 + i) * 4 + j] * b.data<float>()[(n * 4 + j) * 5 + k];
        ref.data<float>()[(n * 3 + i) * 5 + k] = float(s);
      }
  EXPECT_LT(max_abs_diff(out[0], ref), 1e-5);

  // Implicit output with a diagonal and an ellipsis: "...ii" -> "..." trace per batch.
  Tensor c = random_tensor({2, 3, 3}, 21);
  Attributes tr;
  tr.set("equation", str_attr("...ii"));
  auto t = run_single_node("Einsum", {c}, 1, tr, 12);
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].shape(), (Shape{2}));
  for (int n = 0; n < 2; ++n) {
    double s = 0;
    for (int i = 0; i < 3; ++i) s += c.data<float>()[n * 9 + i * 3 + i];
    EXPECT_NEAR(t[0].data<float>()[n], s, 1e-5);
  }

  // Three operands with a broadcast ellipsis and a summed-away label.
  Tensor p = random_tensor({1, 3}, 22), q = random_tensor({4, 3}, 23), r = random_tensor({3, 2}, 24);
  Attributes e3;
  e3.set("equation", str_attr("...i,...i,ij->...j"));
  auto o3 = run_single_node("Einsum", {p, q, r}, 1, e3, 12);
  ASSERT_EQ(o3.size(), 1u);
  ASSERT_EQ(o3[0].shape(), (Shape{4, 2}));
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int i = 0; i < 3; ++i) s += p.data<float>()[i] * q.data<float>()[n * 3 + i] * r.data<float>()[i * 2 + j];
      EXPECT_NEAR(o3[0].data<float>()[n * 2 + j], s, 1e-5);
    }
}

TEST(NnOps, EinsumErrors) {
  Attributes at;
  at.set("equation", str_attr("ij,jk->ik"));
  std::string m = run_error("Einsum", {random_tensor({2, 3}, 1), random_tensor({4, 5}, 2)}, 1, at, 12);
  EXPECT_NE(m.find("label 'j' has size 4 here but 3 elsewhere"), std::string::npos) << m;
  m = run_error("Einsum", {random_tensor({2, 3, 4}, 1), random_tensor({3, 5}, 2)}, 1, at, 12);
  EXPECT_NE(m.find("rank 3"), std::string::npos) << m;
  Attributes bad;
  bad.set("equation", str_attr("i$->i"));
  m = run_error("Einsum", {random_tensor({2}, 1)}, 1, bad, 12);
  EXPECT_NE(m.find("invalid character"), std::string::npos) << m;
}

// ----------------------------------------------------------------------------- spatial

TEST(NnOps, GridSampleIdentityGrid) {
  Tensor x = random_tensor({1, 2, 3, 4}, 25);
  Tensor grid(DType::kFloat32, {1, 3, 4, 2});
  for (int y = 0; y < 3; ++y)
    for (int xx = 0; xx < 4; ++xx) {
      grid.data<float>()[(y * 4 + xx) * 2] = -1.f + 2.f * float(xx) / 3.f;
      grid.data<float>()[(y * 4 + xx) * 2 + 1] = -1.f + 2.f * float(y) / 2.f;
    }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    Attributes a;
    a.set("align_corners", int_attr(1));
    a.set("mode", str_attr(mode));
    auto out = run_single_node("GridSample", {x, grid}, 1, a, 16);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_LT(max_abs_diff(out[0], x), 1e-5) << mode;
  }
  std::string m = run_error("GridSample", {x, random_tensor({1, 3, 4, 3}, 2)}, 1, {}, 16);
  EXPECT_NE(m.find("input 1 (grid) has shape 1x3x4x3"), std::string::npos) << m;
}

// Volumes (opset 20): each depth slice of X is the image times (slice + 1); a grid whose z lands
// on slice 1 exactly samples 2x what the image GridSample gives at the same (x, y), for every
// padding mode (x, y reach past the image) and both modes that volumes take.
TEST(NnOps, GridSampleVolumeSliceIsTheImageSample) {
  Tensor img = random_tensor({2, 3, 5, 6}, 31);
  Tensor vol(DType::kFloat32, {2, 3, 3, 5, 6});
  for (int64_t nc = 0; nc < 6; ++nc)
    for (int64_t d = 0; d < 3; ++d)
      for (int64_t i = 0; i < 30; ++i) vol.data<float>()[(nc * 3 + d) * 30 + i] = float(d + 1) * img.data<float>()[nc * 30 + i];
  Tensor g2 = random_tensor({2, 4, 7, 2}, 32, -1.4f, 1.4f);
  Tensor g3(DType::kFloat32, {2, 1, 4, 7, 3});
  for (int64_t p = 0; p < 2 * 4 * 7; ++p) {
    g3.data<float>()[p * 3] = g2.data<float>()[p * 2];
    g3.data<float>()[p * 3 + 1] = g2.data<float>()[p * 2 + 1];
    g3.data<float>()[p * 3 + 2] = 0.f;  // align_corners = 1: depth index (0 + 1) / 2 * (3 - 1) = 1
  }
  for (const char* mode : {"linear", "nearest"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      Attributes a;
      a.set("align_corners", int_attr(1));
      a.set("mode", str_attr(mode));
      a.set("padding_mode", str_attr(pad));
      auto two = run_single_node("GridSample", {img, g2}, 1, a, 20);
      auto three = run_single_node("GridSample", {vol, g3}, 1, a, 20);
      ASSERT_EQ(three[0].shape(), (Shape{2, 3, 1, 4, 7}));
      for (int64_t i = 0; i < two[0].numel(); ++i)
        ASSERT_NEAR(three[0].data<float>()[i], 2.f * two[0].data<float>()[i], 1e-5f) << mode << " " << pad << " at " << i;
    }
  Attributes cubic;
  cubic.set("mode", str_attr("cubic"));
  std::string m = run_error("GridSample", {vol, g3}, 1, cubic, 20);
  EXPECT_NE(m.find("mode cubic is defined for 4-D images"), std::string::npos) << m;
}

TEST(NnOps, RoiAlignWholeImageAverage) {
  // One roi covering a constant image: every bin averages to the constant.
  Tensor x(DType::kFloat32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = 3.f;
  Attributes a;
  a.set("output_height", int_attr(2));
  a.set("output_width", int_attr(2));
  auto out = run_single_node("RoiAlign", {x, f32({1, 4}, {0, 0, 3, 3}), i64({1}, {0})}, 1, a, 16);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].data<float>()[i], 3.f, 1e-6);
  std::string m = run_error("RoiAlign", {x, f32({1, 4}, {0, 0, 3, 3}), i64({1}, {2})}, 1, a, 16);
  EXPECT_NE(m.find("batch_indices) has value 2"), std::string::npos) << m;
}

TEST(NnOps, MaxUnpoolScatterAndBadIndex) {
  Attributes a;
  a.set("kernel_shape", ints_attr({2, 2}));
  a.set("strides", ints_attr({2, 2}));
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = run_single_node("MaxUnpool", {x, i64({1, 1, 2, 2}, {0, 3, 9, 15})}, 1, a, 11);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(out[0].data<float>()[3], 2);
  EXPECT_EQ(out[0].data<float>()[15], 4);
  std::string m = run_error("MaxUnpool", {x, i64({1, 1, 2, 2}, {0, 3, 9, 16})}, 1, a, 11);
  EXPECT_NE(m.find("input 1 (I) has index 16"), std::string::npos) << m;
}

}  // namespace
}  // namespace ingot::testing
