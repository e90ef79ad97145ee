// Random ops: distributions (mean, spread, support), dtypes, seeds (an engine loaded afresh
// repeats its runs; runs of one engine differ) and that nothing folds them into constants.
#include <cmath>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_as_double(i));
  return v;
}

void mean_and_std(const std::vector<double>& v, double* mean, double* sd) {
  double s = 0, s2 = 0;
  for (double x : v) s += x;
  *mean = s / double(v.size());
  for (double x : v) s2 += (x - *mean) * (x - *mean);
  *sd = std::sqrt(s2 / double(v.size()));
}

// Two runs of one engine, and the first run of a second engine built from the same model.
struct ThreeRuns {
  Tensor first, second, fresh;
};
ThreeRuns three_runs(const Model& m, const std::map<std::string, Tensor>& feeds) {
  ThreeRuns r;
  auto e1 = Engine::from_model(m);
  auto e2 = Engine::from_model(m);
  EXPECT_TRUE(e1 && e2);
  if (!e1 || !e2) return r;
  auto ctx = (*e1)->create_context();
  auto a = ctx->run(feeds), b = ctx->run(feeds), c = (*e2)->create_context()->run(feeds);
  EXPECT_TRUE(a && b && c);
  if (a && b && c) r = {(*a)[0].tensor, (*b)[0].tensor, (*c)[0].tensor};
  return r;
}

TEST(RandomOps, NormalSeededAndNeverFolded) {
  Attributes a;
  a.set("shape", ints_attr({200, 50}));
  a.set("mean", float_attr(2.f));
  a.set("scale", float_attr(0.5f));
  a.set("seed", float_attr(7.f));
  ThreeRuns r = three_runs(single_node_model("RandomNormal", {}, 1, a), {});
  ASSERT_EQ(r.first.shape(), (Shape{200, 50}));
  ASSERT_EQ(r.first.dtype(), DType::kFloat32);
  double mean, sd;
  mean_and_std(as_doubles(r.first), &mean, &sd);
  EXPECT_NEAR(mean, 2.0, 0.03);
  EXPECT_NEAR(sd, 0.5, 0.03);
  EXPECT_NE(as_doubles(r.first), as_doubles(r.second));  // each run draws anew
  EXPECT_EQ(as_doubles(r.first), as_doubles(r.fresh));   // the seed makes an engine's runs repeatable
}

TEST(RandomOps, UniformLikeDtypesAndSupport) {
  Attributes a;
  a.set("low", float_attr(-1.f));
  a.set("high", float_attr(3.f));
  a.set("dtype", int_attr(int64_t(DType::kFloat64)));
  Tensor like(DType::kInt64, {100, 100});
  auto out = run_single_node("RandomUniformLike", {like}, 1, a);
  ASSERT_EQ(out[0].dtype(), DType::kFloat64);
  ASSERT_EQ(out[0].shape(), (Shape{100, 100}));
  auto v = as_doubles(out[0]);
  for (double x : v) ASSERT_TRUE(x >= -1 && x < 3) << x;
  double mean, sd;
  mean_and_std(v, &mean, &sd);
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(sd, 4.0 / std::sqrt(12.0), 0.05);
  // Float16 from a float16 input's dtype; an integer input without 'dtype' is refused.
  auto h = run_single_node("RandomNormalLike", {Tensor(DType::kFloat16, {3, 4})}, 1);
  EXPECT_EQ(h[0].dtype(), DType::kFloat16);
  EXPECT_NE(run_error("RandomNormalLike", {like}, 1).find("expected float16, bfloat16, float32 or float64"), std::string::npos);
}

TEST(RandomOps, BernoulliProbabilities) {
  const int64_t n = 20000;
  Tensor p(DType::kFloat32, {3, n});
  for (int64_t i = 0; i < n; ++i) p.data<float>()[i] = 0.f, p.data<float>()[n + i] = 1.f, p.data<float>()[2 * n + i] = 0.3f;
  Attributes b;
  b.set("dtype", int_attr(int64_t(DType::kBool)));
  auto out = run_single_node("Bernoulli", {p}, 1, b, 15);
  ASSERT_EQ(out[0].dtype(), DType::kBool);
  int64_t ones[3] = {0, 0, 0};
  for (int64_t i = 0; i < 3 * n; ++i) ones[i / n] += out[0].data<bool>()[i];
  EXPECT_EQ(ones[0], 0);
  EXPECT_EQ(ones[1], n);
  EXPECT_NEAR(double(ones[2]) / double(n), 0.3, 0.015);
  EXPECT_EQ(run_single_node("Bernoulli", {p}, 1, {}, 15)[0].dtype(), DType::kFloat32);
  Tensor bad = make<float>({2}, {0.5f, 1.5f});
  EXPECT_NE(run_error("Bernoulli", {bad}, 1, {}, 15).find("holds 1.500000 at 1; probabilities must be in [0, 1]"),
            std::string::npos);
}

TEST(RandomOps, MultinomialFrequencies) {
  Tensor logits = make<float>({2, 3}, {std::log(0.2f), std::log(0.8f), -INFINITY, 0.f, 0.f, 0.f});
  Attributes a;
  a.set("sample_size", int_attr(30000));
  a.set("dtype", int_attr(int64_t(DType::kInt64)));
  auto out = run_single_node("Multinomial", {logits}, 1, a);
  ASSERT_EQ(out[0].shape(), (Shape{2, 30000}));
  ASSERT_EQ(out[0].dtype(), DType::kInt64);
  int64_t count[2][3] = {};
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    const int64_t c = out[0].data<int64_t>()[i];
    ASSERT_TRUE(c >= 0 && c < 3) << c;
    ++count[i / 30000][c];
  }
  EXPECT_EQ(count[0][2], 0);  // probability 0: never drawn
  EXPECT_NEAR(count[0][1] / 30000.0, 0.8, 0.015);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(count[1][c] / 30000.0, 1.0 / 3.0, 0.015);
  EXPECT_EQ(run_single_node("Multinomial", {logits}, 1)[0].dtype(), DType::kInt32);  // default dtype, one sample
  Tensor none = make<float>({1, 2}, {-INFINITY, -INFINITY});
  EXPECT_NE(run_error("Multinomial", {none}, 1).find("no finite log-probability"), std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
