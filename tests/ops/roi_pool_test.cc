// MaxRoiPool against hand-computed bins (Fast R-CNN's rounding and bin edges).
#include <cmath>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

Attributes pooled(int64_t h, int64_t w, float scale = 1.f) {
  Attributes a;
  a.set("pooled_shape", ints_attr({h, w}));
  a.set("spatial_scale", float_attr(scale));
  return a;
}

Tensor iota_image() {  // [2, 1, 4, 4]: batch 0 holds 0..15, batch 1 holds 100..115
  Tensor x(DType::kFloat32, {2, 1, 4, 4});
  for (int i = 0; i < 32; ++i) x.data<float>()[i] = float(i < 16 ? i : 100 + i - 16);
  return x;
}

TEST(MaxRoiPool, BinsAsFastRcnn) {
  Tensor x = iota_image();
  // The whole image in 2 x 2 bins; a 2 x 2 roi in 2 x 2 bins; batch 1's whole image in 1 x 3 bins.
  Tensor rois = make<float>({3, 5}, {0, 0, 0, 3, 3, 0, 1, 1, 2, 2, 1, 0, 0, 3, 3});
  auto out = run_single_node("MaxRoiPool", {x, rois}, 1, pooled(2, 2));
  ASSERT_EQ(out[0].shape(), (Shape{3, 1, 2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{5, 7, 13, 15, 5, 6, 9, 10, 105, 107, 113, 115}));
  // Column bins of 4/3: [0, 2), [1, 3), [2, 4).
  auto thirds = run_single_node("MaxRoiPool", {x, make<float>({1, 5}, {1, 0, 0, 3, 3})}, 1, pooled(1, 3));
  EXPECT_EQ(values<float>(thirds[0]), (std::vector<float>{113, 114, 115}));
  // spatial_scale 0.5: (0, 0)-(5, 5) becomes (0, 0)-(3, 3) (2.5 rounds away from zero); a roi past
  // the image is clipped, its bins beyond it empty (0).
  auto half = run_single_node("MaxRoiPool", {x, make<float>({2, 5}, {0, 0, 0, 5, 5, 0, 4, 4, 12, 12})}, 1, pooled(2, 2, 0.5f));
  EXPECT_EQ(values<float>(half[0]), (std::vector<float>{5, 7, 13, 15, 15, 0, 0, 0}));
}

TEST(MaxRoiPool, NaNAndErrors) {
  Tensor x = iota_image();
  x.data<float>()[0] = std::nanf("");
  auto out = run_single_node("MaxRoiPool", {x, make<float>({1, 5}, {0, 0, 0, 1, 1})}, 1, pooled(1, 1));
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
  EXPECT_NE(run_error("MaxRoiPool", {x, make<float>({1, 5}, {2, 0, 0, 1, 1})}, 1, pooled(1, 1)).find("row 0 has batch index 2"),
            std::string::npos);
  EXPECT_NE(run_error("MaxRoiPool", {x, make<float>({1, 4}, {0, 0, 1, 1})}, 1, pooled(1, 1)).find("expected [num_rois, 5]"),
            std::string::npos);
  EXPECT_NE(run_error("MaxRoiPool", {x, make<float>({1, 5}, {0, 0, 0, 1, 1})}, 1, {}).find("'pooled_shape' is required"),
            std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
