// ingot::Tensor's buffers: zero-filled on allocation, copies share the buffer, clone() is a deep
// copy of every byte (written in one pass, not over a zero fill) with its own buffer.
#include <gtest/gtest.h>

#include <cstring>

#include "ingot/tensor.h"

namespace ingot {
namespace {

TEST(Tensor, NewBuffersAreZeroAndAligned) {
  Tensor t(DType::kFloat32, {3, 5});
  ASSERT_EQ(t.nbytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

TEST(Tensor, CloneCopiesEveryElementIntoItsOwnBuffer) {
  Tensor t(DType::kInt16, {7, 3});  // 42 bytes: the clone's buffer has padding after them
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int16_t>()[i] = int16_t(1000 - 37 * i);
  Tensor shared = t;
  Tensor c = t.clone();
  ASSERT_EQ(c.dtype(), t.dtype());
  ASSERT_EQ(c.shape(), t.shape());
  EXPECT_NE(c.raw(), t.raw());
  EXPECT_EQ(shared.raw(), t.raw());
  EXPECT_EQ(std::memcmp(c.raw(), t.raw(), t.nbytes()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.raw()) % 64, 0u);
  t.data<int16_t>()[4] = 1;
  EXPECT_EQ(c.data<int16_t>()[4], int16_t(1000 - 37 * 4));
  EXPECT_EQ(shared.data<int16_t>()[4], 1);
}

TEST(Tensor, CloneOfEmptyAndUndefined) {
  Tensor empty(DType::kFloat16, {0, 4});
  Tensor c = empty.clone();
  EXPECT_TRUE(c.defined());
  EXPECT_EQ(c.numel(), 0);
  EXPECT_EQ(c.shape(), (Shape{0, 4}));
  EXPECT_FALSE(Tensor().clone().defined());
}

}  // namespace
}  // namespace ingot
