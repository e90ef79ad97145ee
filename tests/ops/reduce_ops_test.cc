// Reductions, ArgMax/ArgMin, TopK, losses, signal ops, Det and NonMaxSuppression against
// plain references, plus bad-input cases that must fail with a clear message.
#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <numeric>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

Tensor i64(std::vector<int64_t> v, Shape s) {
  Tensor t(DType::kInt64, std::move(s));
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}
Tensor i64_vec(std::vector<int64_t> v) { int64_t n = int64_t(v.size()); return i64(std::move(v), {n}); }
Tensor i64_scalar(int64_t v) { return i64({v}, {}); }
Tensor f32(std::vector<float> v, Shape s) {
  Tensor t(DType::kFloat32, std::move(s));
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

void expect_error(const Status& st, const std::string& needle) {
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

// Reference reduction: for every output index, collects the reduced values.
Tensor ref_reduce(const Tensor& x, std::vector<int64_t> axes, bool keepdims,
                  const std::function<double(const std::vector<double>&)>& f) {
  const int r = x.rank();
  std::vector<bool> red(size_t(r), axes.empty());
  for (int64_t a : axes) red[size_t(a < 0 ? a + r : a)] = true;
  Shape os, ks;  // ks: output shape with keepdims
  for (int i = 0; i < r; ++i) {
    ks.push_back(red[size_t(i)] ? 1 : x.dim(i));
    if (!red[size_t(i)] || keepdims) os.push_back(ks.back());
  }
  std::vector<std::vector<double>> groups(size_t(shape_numel(ks)));
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, o = 0, mul = 1;
    for (int d = r - 1; d >= 0; --d) {
      int64_t c = rem % x.dim(d);
      rem /= x.dim(d);
      if (!red[size_t(d)]) o += c * mul;
      mul *= ks[size_t(d)];
    }
    groups[size_t(o)].push_back(x.data<float>()[i]);
  }
  Tensor y(DType::kFloat32, os);
  for (size_t o = 0; o < groups.size(); ++o) y.data<float>()[o] = float(f(groups[o]));
  return y;
}

// Max |a - b| / (1 + |b|) over float32 tensors of equal shape.
double max_rel_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32) return 1e300;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isinf(y) && x == y) continue;
    m = std::max(m, std::fabs(x - y) / (1 + std::fabs(y)));
  }
  return m;
}

struct RefOp { const char* name; std::function<double(const std::vector<double>&)> f; };

std::vector<RefOp> ref_ops() {
  auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  return {
      {"ReduceSum", sum},
      {"ReduceMean", [=](const std::vector<double>& v) { return sum(v) / double(v.size()); }},
      {"ReduceMax", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }},
      {"ReduceMin", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd", [](const std::vector<double>& v) { double p = 1; for (double x : v) p *= x; return p; }},
      {"ReduceL1", [](const std::vector<double>& v) { double s = 0; for (double x : v) s += std::fabs(x); return s; }},
      {"ReduceL2", [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x * x; return std::sqrt(s); }},
      {"ReduceSumSquare", [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x * x; return s; }},
      {"ReduceLogSum", [=](const std::vector<double>& v) { return std::log(sum(v)); }},
      {"ReduceLogSumExp", [](const std::vector<double>& v) { double s = 0; for (double x : v) s += std::exp(x); return std::log(s); }},
  };
}

TEST(ReduceOps, RandomMatchesReference) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{4, 5, 6}, {2}}, {{4, 5, 6}, {0}}, {{4, 5, 6}, {1}}, {{4, 5, 6}, {0, 2}}, {{4, 5, 6}, {}},
      {{3, 1, 40}, {-1}}, {{2, 3, 4, 5}, {1, 3}}, {{2, 3, 4, 5}, {0, 1}}, {{7}, {0}}, {{300, 37}, {0}},
      {{64, 700}, {1}}, {{64, 700}, {0}}, {{3, 12000}, {0}}, {{2, 30, 400}, {0, 2}},
  };
  uint32_t seed = 1;
  for (const auto& op : ref_ops()) {
    const bool positive = std::string(op.name) == "ReduceLogSum";
    for (const auto& [shape, axes] : cases) {
      for (int keep = 0; keep <= 1; ++keep) {
        Tensor x = random_tensor(shape, seed++, positive ? 0.1f : -1.f, 1.f);
        Tensor want = ref_reduce(x, axes, keep != 0, op.f);
        // opset 18: axes as an input
        Attributes a18;
        a18.set("keepdims", int_attr(keep));
        std::vector<Tensor> ins{x};
        if (!axes.empty()) ins.push_back(i64_vec(axes));
        auto got = run_single_node(op.name, ins, 1, a18, 18);
        ASSERT_EQ(got.size(), 1u);
        const double tol = std::string(op.name) == "ReduceProd" ? 1e-6 : 1e-4;
        EXPECT_LE(max_rel_diff(got[0], want), tol) << op.name << " " << shape_str(shape) << " keep=" << keep;
        // opset 13: axes as an attribute (ReduceSum already takes the input there)
        if (std::string(op.name) != "ReduceSum") {
          Attributes a13;
          a13.set("keepdims", int_attr(keep));
          if (!axes.empty()) a13.set("axes", ints_attr(axes));
          auto got13 = run_single_node(op.name, {x}, 1, a13, 13);
          ASSERT_EQ(got13.size(), 1u);
          EXPECT_LE(max_rel_diff(got13[0], want), tol) << op.name << " opset 13";
        }
      }
    }
  }
}

TEST(ReduceOps, EmptySetAndNoop) {
  Tensor x(DType::kFloat32, {2, 0, 3});
  auto s = run_single_node("ReduceSum", {x, i64_vec({1})}, 1, {}, 18);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].shape(), (Shape{2, 1, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(s[0].data<float>()[i], 0.f);
  auto m = run_single_node("ReduceMax", {x, i64_vec({1})}, 1, {}, 18);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(std::isinf(m[0].data<float>()[0]) && m[0].data<float>()[0] < 0);
  auto p = run_single_node("ReduceProd", {x, i64_vec({1})}, 1, {}, 18);
  EXPECT_EQ(p[0].data<float>()[0], 1.f);
  auto lse = run_single_node("ReduceLogSumExp", {x, i64_vec({1})}, 1, {}, 18);
  EXPECT_TRUE(std::isinf(lse[0].data<float>()[0]) && lse[0].data<float>()[0] < 0);

  Tensor y = random_tensor({3, 4}, 7);
  Attributes noop;
  noop.set("noop_with_empty_axes", int_attr(1));
  auto n = run_single_node("ReduceSum", {y, i64({}, {0})}, 1, noop, 18);
  EXPECT_EQ(max_abs_diff(n[0], y), 0.0);
}

TEST(ReduceOps, IntegerAndHalf) {
  Tensor x(DType::kInt32, {3, 4});
  for (int i = 0; i < 12; ++i) x.data<int32_t>()[i] = i - 5;
  auto s = run_single_node("ReduceSum", {x, i64_vec({1})}, 1, {}, 18);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].dtype(), DType::kInt32);
  EXPECT_EQ(s[0].data<int32_t>()[0], -5 - 4 - 3 - 2);
  EXPECT_EQ(s[0].data<int32_t>()[2], 3 + 4 + 5 + 6);
  auto mx = run_single_node("ReduceMax", {x, i64_vec({0})}, 1, {}, 18);
  EXPECT_EQ(mx[0].data<int32_t>()[3], 6);

  Tensor h(DType::kFloat16, {2, 1000});
  for (int i = 0; i < 2000; ++i) h.data<float16>()[i] = float16(0.01f);
  auto hs = run_single_node("ReduceSum", {h, i64_vec({1})}, 1, {}, 18);
  EXPECT_NEAR(float(hs[0].data<float16>()[0]), 10.0f, 0.05f);
}

TEST(ReduceOps, BadInputs) {
  Tensor x = random_tensor({2, 3, 4}, 3);
  expect_error(run_status("ReduceSum", {x, i64_vec({4})}, 1, {}, 18), "axes value 4 is out of range for rank 3");
  expect_error(run_status("ReduceMean", {x, i64_vec({1, -2})}, 1, {}, 18), "repeated");
  Attributes a;
  a.set("axes", ints_attr({-4}));
  expect_error(run_status("ReduceMax", {x}, 1, a, 13), "axes value -4 is out of range");
  Tensor b(DType::kBool, {2});
  expect_error(run_status("ReduceSum", {b}, 1, {}, 18), "dtype bool");
}

TEST(ReduceOps, ArgMaxArgMin) {
  Tensor x = f32({1, 3, 3, 2, 0, 0, 5, 5, 1}, {3, 3});
  Attributes a;
  a.set("axis", int_attr(1));
  a.set("keepdims", int_attr(0));
  auto r = run_single_node("ArgMax", {x}, 1, a, 13);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape(), (Shape{3}));
  EXPECT_EQ(r[0].to_int_vector(), (std::vector<int64_t>{1, 0, 0}));
  a.set("select_last_index", int_attr(1));
  r = run_single_node("ArgMax", {x}, 1, a, 13);
  EXPECT_EQ(r[0].to_int_vector(), (std::vector<int64_t>{2, 0, 1}));
  r = run_single_node("ArgMin", {x}, 1, a, 13);
  EXPECT_EQ(r[0].to_int_vector(), (std::vector<int64_t>{0, 2, 2}));
  // axis 0, random, vs reference
  Tensor y = random_tensor({5, 7, 3}, 11);
  Attributes b;
  b.set("axis", int_attr(1));
  r = run_single_node("ArgMin", {y}, 1, b, 13);
  EXPECT_EQ(r[0].shape(), (Shape{5, 1, 3}));
  for (int64_t o = 0; o < 5; ++o)
    for (int64_t j = 0; j < 3; ++j) {
      int64_t best = 0;
      for (int64_t k = 1; k < 7; ++k)
        if (y.data<float>()[(o * 7 + k) * 3 + j] < y.data<float>()[(o * 7 + best) * 3 + j]) best = k;
      EXPECT_EQ(r[0].data<int64_t>()[o * 3 + j], best);
    }
  Attributes bad;
  bad.set("axis", int_attr(3));
  expect_error(run_status("ArgMax", {y}, 1, bad, 13), "out of range for rank 3");
}

TEST(ReduceOps, TopKStableAndRandom) {
  Tensor x = f32({3, 1, 3, 2, 1, 3}, {1, 6});
  auto r = run_single_node("TopK", {x, i64_vec({4})}, 2, {}, 11);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].to_int_vector(), (std::vector<int64_t>{0, 2, 5, 3}));
  Attributes small;
  small.set("largest", int_attr(0));
  r = run_single_node("TopK", {x, i64_vec({3})}, 2, small, 11);
  EXPECT_EQ(r[1].to_int_vector(), (std::vector<int64_t>{1, 4, 3}));

  Tensor y = random_tensor({4, 50, 3}, 5);
  Attributes ax;
  ax.set("axis", int_attr(1));
  r = run_single_node("TopK", {y, i64_vec({7})}, 2, ax, 11);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].shape(), (Shape{4, 7, 3}));
  for (int64_t o = 0; o < 4; ++o)
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<float> col;
      for (int64_t k = 0; k < 50; ++k) col.push_back(y.data<float>()[(o * 50 + k) * 3 + j]);
      std::vector<float> sorted = col;
      std::sort(sorted.rbegin(), sorted.rend());
      for (int64_t k = 0; k < 7; ++k) {
        EXPECT_EQ(r[0].data<float>()[(o * 7 + k) * 3 + j], sorted[size_t(k)]);
        EXPECT_EQ(col[size_t(r[1].data<int64_t>()[(o * 7 + k) * 3 + j])], sorted[size_t(k)]);
      }
    }
  expect_error(run_status("TopK", {x, i64_vec({7})}, 2, {}, 11), "K value 7 is out of range");
  // A node that lists only the values (ONNX requires both outputs; the fuzz test found that
  // TopK then wrote its indices past the node's outputs): the values come back, nothing else.
  r = run_single_node("TopK", {x, i64_vec({2})}, 1, {}, 11);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(r[0].data<float>()[0], 3.f);
  EXPECT_EQ(r[0].data<float>()[1], 3.f);
}

TEST(ReduceOps, LossesMatchReference) {
  const int64_t N = 3, C = 4, D = 5;
  Tensor x = random_tensor({N, C, D}, 21, -2.f, 2.f);
  Tensor t(DType::kInt64, {N, D});
  for (int64_t i = 0; i < N * D; ++i) t.data<int64_t>()[i] = (i * 7) % C;
  t.data<int64_t>()[3] = -1;  // ignored
  Tensor w = f32({0.5f, 1.f, 2.f, 1.5f}, {C});
  Attributes a;
  a.set("ignore_index", int_attr(-1));
  // reference: mean of -logp[t] * w[t] over non-ignored, divided by sum of weights
  auto ref = [&](bool softmax) {
    double s = 0, ws = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        int64_t c = t.data<int64_t>()[n * D + d];
        if (c == -1) continue;
        double lp = x.data<float>()[(n * C + c) * D + d];
        if (softmax) {
          double se = 0;
          for (int64_t k = 0; k < C; ++k) se += std::exp(double(x.data<float>()[(n * C + k) * D + d]));
          lp -= std::log(se);
        }
        s += -lp * w.data<float>()[c];
        ws += w.data<float>()[c];
      }
    return s / ws;
  };
  auto nll = run_single_node("NegativeLogLikelihoodLoss", {x, t, w}, 1, a, 13);
  ASSERT_EQ(nll.size(), 1u);
  EXPECT_EQ(nll[0].shape(), Shape{});
  EXPECT_NEAR(nll[0].data<float>()[0], ref(false), 1e-5);
  auto sce = run_single_node("SoftmaxCrossEntropyLoss", {x, t, w}, 2, a, 13);
  ASSERT_EQ(sce.size(), 2u);
  EXPECT_NEAR(sce[0].data<float>()[0], ref(true), 1e-5);
  EXPECT_EQ(sce[1].shape(), x.shape());

  Tensor bad = t.clone();
  bad.data<int64_t>()[5] = 4;
  expect_error(run_status("NegativeLogLikelihoodLoss", {x, bad}, 1, a, 13), "target value 4 at index 5 is out of range for 4 classes");
  expect_error(run_status("NegativeLogLikelihoodLoss", {x, i64({0}, {1})}, 1, {}, 13), "target shape");
  Attributes r;
  r.set("reduction", string_attr("avg"));
  expect_error(run_status("NegativeLogLikelihoodLoss", {x, t}, 1, r, 13), "'reduction' value 'avg'");
}

TEST(ReduceOps, DftMatchesNaive) {
  for (int64_t n : {8, 12, 64, 100}) {
    Tensor x = random_tensor({2, n, 2}, uint32_t(n));
    for (int inv = 0; inv <= 1; ++inv) {
      Attributes a;
      a.set("inverse", int_attr(inv));
      auto r = run_single_node("DFT", {x}, 1, a, 17);
      ASSERT_EQ(r.size(), 1u);
      ASSERT_EQ(r[0].shape(), (Shape{2, n, 2}));
      double err = 0;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < n; ++k) {
          std::complex<double> s = 0;
          for (int64_t j = 0; j < n; ++j) {
            const float* v = x.data<float>() + (b * n + j) * 2;
            s += std::complex<double>(v[0], v[1]) * std::polar(1.0, (inv ? 2 : -2) * M_PI * double(j * k % n) / double(n));
          }
          if (inv) s /= double(n);
          const float* o = r[0].data<float>() + (b * n + k) * 2;
          err = std::max({err, std::fabs(o[0] - s.real()), std::fabs(o[1] - s.imag())});
        }
      EXPECT_LT(err, 1e-4) << "n=" << n << " inverse=" << inv;
    }
  }
  Attributes os;
  os.set("onesided", int_attr(1));
  auto r = run_single_node("DFT", {random_tensor({1, 10, 1}, 3), i64_scalar(16)}, 1, os, 17);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape(), (Shape{1, 9, 2}));
  Attributes bad;
  bad.set("axis", int_attr(2));
  expect_error(run_status("DFT", {random_tensor({1, 10, 1}, 3)}, 1, bad, 17), "axis value 2 is out of range");
  // opset 20: dft_length and axis are inputs; zero padding to 40 along axis 0 of a [5, 3, 1] signal.
  Tensor z = random_tensor({5, 3, 1}, 9);
  auto r20 = run_single_node("DFT", {z, i64_scalar(40), i64_scalar(0)}, 1, {}, 20);
  ASSERT_EQ(r20.size(), 1u);
  ASSERT_EQ(r20[0].shape(), (Shape{40, 3, 2}));
  double err = 0;
  for (int64_t k = 0; k < 40; ++k)
    for (int64_t j = 0; j < 3; ++j) {
      std::complex<double> s = 0;
      for (int64_t t = 0; t < 5; ++t) s += double(z.data<float>()[t * 3 + j]) * std::polar(1.0, -2 * M_PI * double(t * k) / 40.0);
      const float* o = r20[0].data<float>() + (k * 3 + j) * 2;
      err = std::max({err, std::fabs(o[0] - s.real()), std::fabs(o[1] - s.imag())});
    }
  EXPECT_LT(err, 1e-4);
}

TEST(ReduceOps, StftMatchesNaive) {
  const int64_t L = 200, F = 48, S = 20;
  Tensor x = random_tensor({1, L, 1}, 4);
  Tensor w = random_tensor({F}, 5, 0.f, 1.f);
  auto r = run_single_node("STFT", {x, i64_scalar(S), w}, 1, {}, 17);
  ASSERT_EQ(r.size(), 1u);
  const int64_t frames = 1 + (L - F) / S, bins = F / 2 + 1;
  ASSERT_EQ(r[0].shape(), (Shape{1, frames, bins, 2}));
  double err = 0;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < bins; ++k) {
      std::complex<double> s = 0;
      for (int64_t t = 0; t < F; ++t)
        s += double(x.data<float>()[f * S + t]) * w.data<float>()[t] * std::polar(1.0, -2 * M_PI * double(t * k) / double(F));
      const float* o = r[0].data<float>() + (f * bins + k) * 2;
      err = std::max({err, std::fabs(o[0] - s.real()), std::fabs(o[1] - s.imag())});
    }
  EXPECT_LT(err, 1e-4);
  expect_error(run_status("STFT", {x, i64_scalar(0), w}, 1, {}, 17), "frame_step' value 0");
}

TEST(ReduceOps, WindowsAndDet) {
  auto h = run_single_node("HannWindow", {i64_scalar(4)}, 1, {}, 17);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_LE(max_abs_diff(h[0], f32({0.f, 0.5f, 1.f, 0.5f}, {4})), 1e-6);
  Tensor m = f32({2, 1, 0, 1, 3, 1, 0, 1, 4, /* */ 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 3, 3});
  auto d = run_single_node("Det", {m}, 1, {}, 17);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].shape(), (Shape{2}));
  EXPECT_NEAR(d[0].data<float>()[0], 2 * 11 - 1 * 4, 1e-4);
  EXPECT_NEAR(d[0].data<float>()[1], 0.0, 1e-4);
  expect_error(run_status("Det", {random_tensor({2, 3}, 1)}, 1, {}, 17), "square");
}

TEST(ReduceOps, NonMaxSuppression) {
  Tensor boxes = f32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
                     {1, 6, 4});
  Tensor scores = f32({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  auto r = run_single_node("NonMaxSuppression", {boxes, scores, i64_vec({3}), f32({0.5f}, {1}), f32({0.f}, {1})}, 1, {}, 11);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(r[0].to_int_vector(), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  expect_error(run_status("NonMaxSuppression", {boxes, f32({1, 2}, {1, 1, 2})}, 1, {}, 11), "does not match boxes shape");
}

}  // namespace
}  // namespace ingot::testing
