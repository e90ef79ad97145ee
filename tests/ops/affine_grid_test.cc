// AffineGrid (opset 20) against PyTorch's affine_grid: a published 2-D example, a 3-D grid
// checked point by point, align_corners, and errors.
#include "op_test_util.h"

namespace ingot::testing {
namespace {

Attributes align(int64_t a) {
  Attributes at;
  at.set("align_corners", int_attr(a));
  return at;
}

TEST(AffineGrid, TwoDimensionalAsPyTorch) {
  // torch.nn.functional.affine_grid(theta, (1, 3, 2, 3), align_corners=False).
  Tensor theta = make<float>({1, 2, 3}, {0.8f, 0.5f, 0.f, -0.5f, 0.8f, 0.f});
  auto out = run_single_node("AffineGrid", {theta, make<int64_t>({4}, {1, 3, 2, 3})}, 1, {}, 20);
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 3, 2}));
  const std::vector<float> want = {-0.78333336f, -0.06666666f, -0.25f, -0.4f, 0.28333336f, -0.73333335f,
                                   -0.28333336f, 0.73333335f,  0.25f,  0.4f,  0.78333336f, 0.06666666f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data<float>()[i], want[i], 1e-6f) << i;
  // align_corners = 1 with the identity: the grid's corners are exactly -1 and 1; a size-1 axis is 0.
  Tensor id = make<float>({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  auto a = run_single_node("AffineGrid", {id, make<int64_t>({4}, {1, 1, 1, 3})}, 1, align(1), 20);
  EXPECT_EQ(values<float>(a[0]), (std::vector<float>{-1, 0, 0, 0, 1, 0}));
}

TEST(AffineGrid, ThreeDimensionalPointByPoint) {
  Tensor theta = random_tensor({2, 3, 4}, 7);
  const int64_t D = 2, H = 3, W = 4;
  for (int64_t ac : {0, 1}) {
    auto out = run_single_node("AffineGrid", {theta, make<int64_t>({5}, {2, 5, D, H, W})}, 1, align(ac), 20);
    ASSERT_EQ(out[0].shape(), (Shape{2, D, H, W, 3}));
    auto coord = [&](int64_t i, int64_t n) { return ac ? (n > 1 ? 2.0 * i / (n - 1) - 1 : 0.0) : (2.0 * i + 1) / n - 1; };
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            const double p[4] = {coord(w, W), coord(h, H), coord(d, D), 1.0};
            for (int r = 0; r < 3; ++r) {
              double v = 0;
              for (int j = 0; j < 4; ++j) v += double(theta.data<float>()[(b * 3 + r) * 4 + j]) * p[j];
              const int64_t at = (((b * D + d) * H + h) * W + w) * 3 + r;
              ASSERT_NEAR(out[0].data<float>()[at], v, 1e-6) << "align " << ac << " at " << at;
            }
          }
  }
}

TEST(AffineGrid, Errors) {
  Tensor theta = random_tensor({1, 2, 3}, 1);
  EXPECT_NE(run_error("AffineGrid", {theta, make<int64_t>({5}, {1, 1, 2, 2, 2})}, 1, {}, 20).find("must be 4 int64 values"),
            std::string::npos);
  EXPECT_NE(run_error("AffineGrid", {theta, make<int64_t>({4}, {2, 1, 2, 2})}, 1, {}, 20).find("has batch 2, theta has 1"),
            std::string::npos);
  EXPECT_NE(run_error("AffineGrid", {random_tensor({1, 2, 2}, 1), make<int64_t>({4}, {1, 1, 2, 2})}, 1, {}, 20)
                .find("expected [N, 2, 3] or [N, 3, 4]"),
            std::string::npos);
  EXPECT_NE(run_error("AffineGrid", {theta, make<int64_t>({4}, {1, 1, 2, 2})}, 1, align(2), 20).find("'align_corners' is 2"),
            std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
