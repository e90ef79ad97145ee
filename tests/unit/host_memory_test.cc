// ir/host_memory.h: what counts as available host memory (MemAvailable, a memory cgroup's
// headroom) read from the files' text, and the check on this machine.
#include "ir/host_memory.h"

#include <gtest/gtest.h>

namespace ingot {
namespace {

TEST(HostMemory, MemAvailableFromMeminfo) {
  const std::string meminfo =
      "MemTotal:       24634936 kB\nMemFree:        21000000 kB\nMemAvailable:   22000000 kB\nBuffers: 1 kB\n";
  EXPECT_EQ(meminfo_available(meminfo), std::optional<uint64_t>(22000000ull * 1024));
  EXPECT_EQ(meminfo_available("MemTotal: 1 kB\n"), std::nullopt);
  EXPECT_EQ(meminfo_available(""), std::nullopt);
}

TEST(HostMemory, CgroupHeadroom) {
  // cgroup v2: 4 GiB limit, 3 GiB used of which 1 GiB inactive file cache: 2 GiB of headroom.
  const std::string v2stat = "anon 100\nfile 2000\nactive_file 5\ninactive_file 1073741824\n";
  EXPECT_EQ(cgroup_headroom("4294967296\n", "3221225472\n", v2stat), std::optional<uint64_t>(2147483648ull));
  EXPECT_EQ(cgroup_headroom("max\n", "3221225472\n", v2stat), std::nullopt);
  // cgroup v1: hierarchical total_inactive_file wins over the group's own inactive_file.
  const std::string v1stat = "cache 10\ninactive_file 1\ntotal_inactive_file 1073741824\n";
  EXPECT_EQ(cgroup_headroom("4294967296\n", "3221225472\n", v1stat), std::optional<uint64_t>(2147483648ull));
  EXPECT_EQ(cgroup_headroom("9223372036854771712\n", "2966786048\n", v1stat), std::nullopt);  // v1's "no limit"
  // Over the limit (usage can pass it briefly): no headroom, not a wrapped-around huge number.
  EXPECT_EQ(cgroup_headroom("1000\n", "5000\n", ""), std::optional<uint64_t>(0));
  EXPECT_EQ(cgroup_headroom("", "5000\n", ""), std::nullopt);
  EXPECT_EQ(cgroup_headroom("1000\n", "", ""), std::nullopt);
}

TEST(HostMemory, SmallBuffersAreNotCheckedAndHugeOnesRefused) {
  EXPECT_TRUE(host_memory_available(1 << 20));
  EXPECT_TRUE(host_memory_available(kHostMemoryCheckBytes - 1));
  EXPECT_FALSE(host_memory_available(size_t(1) << 60));  // 1 EiB: no machine, no cgroup
}

}  // namespace
}  // namespace ingot
