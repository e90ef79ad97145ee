// LpNormalization against a double-precision reference, on every axis and both norms.
#include <cmath>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

Tensor lp_reference(const Tensor& x, int axis, int p) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s[size_t(axis)];
  Tensor y(DType::kFloat32, s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < n; ++k) {
        double v = x.data<float>()[(o * n + k) * inner + i];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = (o * n + k) * inner + i;
        y.data<float>()[at] = norm == 0 ? 0.f : float(x.data<float>()[at] / norm);
      }
    }
  return y;
}

TEST(LpNormalization, EveryAxisBothNorms) {
  Tensor x = random_tensor({3, 4, 5}, 11, -2.f, 2.f);
  for (int p : {1, 2})
    for (int axis = -3; axis < 3; ++axis) {
      Attributes a;
      a.set("axis", int_attr(axis));
      a.set("p", int_attr(p));
      auto out = run_single_node("LpNormalization", {x}, 1, a);
      ASSERT_EQ(out.size(), 1u);
      Tensor ref = lp_reference(x, axis < 0 ? axis + 3 : axis, p);
      for (int64_t i = 0; i < x.numel(); ++i)
        ASSERT_NEAR(out[0].data<float>()[i], ref.data<float>()[i], 1e-6f) << "p " << p << " axis " << axis << " at " << i;
    }
}

TEST(LpNormalization, DefaultsZeroLanesAndErrors) {
  // Defaults: p = 2 over the last axis. A lane of zeros stays zeros (no 0/0).
  Tensor x = make<float>({2, 2}, {3, 4, 0, 0});
  EXPECT_EQ(values<float>(run_single_node("LpNormalization", {x}, 1)[0]), (std::vector<float>{0.6f, 0.8f, 0, 0}));
  Attributes p3;
  p3.set("p", int_attr(3));
  const std::string m = run_error("LpNormalization", {x}, 1, p3);
  EXPECT_NE(m.find("attribute 'p' is 3; expected 1 or 2"), std::string::npos) << m;
}

}  // namespace
}  // namespace ingot::testing
