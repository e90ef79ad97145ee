#include <gtest/gtest.h>

#include "ir/shape_util.h"

using namespace ingot;

TEST(ShapeUtil, BroadcastsNumpyStyle) {
  auto s = broadcast_shapes({{2, 1, 4}, {3, 1}, {4}});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, (Shape{2, 3, 4}));
}

TEST(ShapeUtil, RejectsIncompatibleShapes) {
  auto s = broadcast_shapes({{2, 3}, {4}});
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.status().message().find("2x3"), std::string::npos);
}

TEST(ShapeUtil, NormalizesNegativeAxes) {
  EXPECT_EQ(*normalize_axis(-1, 3), 2);
  EXPECT_FALSE(normalize_axis(3, 3).has_value());
}
