// The L2 prefetch plan (backends/cuda/cuda_l2_prefetch.h): which byte ranges one launch asks for.
// Host arithmetic only, so these cases run without a GPU too; that prefetching changes no output
// is checked on the fixtures in engine_test.cc.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_l2_prefetch.h"

namespace ingot::cuda {
namespace {

using R = ByteRange;
constexpr int64_t kNoBudget = int64_t(1) << 40;

TEST(L2PrefetchRanges, SortedAndMergedWhereTheyOverlapOrTouch) {
  EXPECT_EQ(prefetch_ranges({{4096, 256}, {0, 1024}, {1024, 512}, {512, 256}}, kNoBudget),
            (std::vector<R>{{0, 1536}, {4096, 256}}));
}

TEST(L2PrefetchRanges, EmptyRangesAreDroppedAndLengthsRoundedTo16Bytes) {
  EXPECT_EQ(prefetch_ranges({{256, 0}, {512, 10}, {1024, 17}}, kNoBudget), (std::vector<R>{{512, 16}, {1024, 32}}));
  EXPECT_TRUE(prefetch_ranges({}, kNoBudget).empty());
}

TEST(L2PrefetchRanges, SmallestGapsMergedUntilFourRemain) {
  // Six ranges with gaps of 256, 2048, 64, 4096 and 1024 bytes: the 64 and then the 256 close.
  const std::vector<R> in{{0, 256}, {512, 256}, {2816, 64}, {2944, 128}, {7168, 256}, {8448, 256}};
  EXPECT_EQ(prefetch_ranges(in, kNoBudget), (std::vector<R>{{0, 768}, {2816, 256}, {7168, 256}, {8448, 256}}));
}

TEST(L2PrefetchRanges, CutAfterTheBudgetInOffsetOrder) {
  EXPECT_EQ(prefetch_ranges({{8192, 4096}, {0, 4096}}, 5000), (std::vector<R>{{0, 4096}, {8192, 912}}));
  EXPECT_EQ(prefetch_ranges({{0, 4096}, {8192, 4096}}, 4096), (std::vector<R>{{0, 4096}}));
}

TEST(L2PrefetchRanges, OneRangeIsAtMost2GiB) {
  EXPECT_EQ(prefetch_ranges({{0, int64_t(3) << 30}}, kNoBudget), (std::vector<R>{{0, int64_t(1) << 31}}));
}

}  // namespace
}  // namespace ingot::cuda
