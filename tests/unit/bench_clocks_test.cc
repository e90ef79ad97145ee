// ingot bench's report of a GPU's clocks (tools/bench_clocks.h): the text line, the JSON, and
// when the power cap counts as holding the clock down.
#include <gtest/gtest.h>

#include "../../tools/bench_clocks.h"

namespace ingot::bench {
namespace {

DeviceClockReport capped() {
  DeviceClockReport r;
  r.samples = 163;
  r.sm_mhz_median = 1725, r.sm_mhz_min = 1515, r.sm_mhz_max = 1980;
  r.power_w_median = 690.6, r.power_w_max = 702.2, r.power_limit_w = 700;
  r.held_by = {{"power cap", 1.0}, {"idle", 0.012}};
  r.energy_j = 297.36;
  return r;
}

TEST(BenchClocks, DescribesClocksPowerAndReasons) {
  EXPECT_EQ(describe_clocks(capped(), 300),
            "SM 1725 MHz median (lowest 1515, maximum 1980), 691 W median (highest 702, limit 700 W), 991.2 mJ a run, "
            "163 samples; clock held below its maximum by: power cap 100 %, idle 1 %");
  // No runs, or no energy counter: no energy a run.
  EXPECT_EQ(describe_clocks(capped(), 0).find("mJ"), std::string::npos);
  DeviceClockReport free;
  free.samples = 1;
  free.sm_mhz_median = free.sm_mhz_min = 1980;
  free.power_w_median = free.power_w_max = 250;
  EXPECT_EQ(describe_clocks(free, 10),
            "SM 1980 MHz median (lowest 1980), 250 W median (highest 250), 1 sample; clock not held below its maximum");
  EXPECT_EQ(describe_clocks(DeviceClockReport{}, 10), "no sample taken");
}

TEST(BenchClocks, JsonKeepsEveryNumber) {
  const nlohmann::json j = clocks_json(capped(), 300);
  EXPECT_EQ(j["samples"], 163);
  EXPECT_DOUBLE_EQ(j["sm_mhz_median"].get<double>(), 1725);
  EXPECT_DOUBLE_EQ(j["sm_mhz_min"].get<double>(), 1515);
  EXPECT_DOUBLE_EQ(j["sm_mhz_max"].get<double>(), 1980);
  EXPECT_DOUBLE_EQ(j["power_w_median"].get<double>(), 690.6);
  EXPECT_DOUBLE_EQ(j["power_w_max"].get<double>(), 702.2);
  EXPECT_DOUBLE_EQ(j["power_limit_w"].get<double>(), 700);
  EXPECT_DOUBLE_EQ(j["held_by"]["power cap"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["held_by"]["idle"].get<double>(), 0.012);
  EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 297.36);
  EXPECT_NEAR(j["millijoules_per_run"].get<double>(), 991.2, 1e-9);
  DeviceClockReport unknown = capped();
  unknown.energy_j = -1;
  const nlohmann::json u = clocks_json(unknown, 300);
  EXPECT_TRUE(u["energy_j"].is_null());
  EXPECT_TRUE(u["millijoules_per_run"].is_null());
}

TEST(BenchClocks, PowerCappedWhenTheCapHoldsHalfTheSamples) {
  DeviceClockReport r = capped();
  EXPECT_TRUE(power_capped(r));
  r.held_by = {{"thermal (software)", 0.9}, {"power cap", 0.49}};
  EXPECT_FALSE(power_capped(r));
  r.held_by = {{"power cap", 0.5}};
  EXPECT_TRUE(power_capped(r));
  r.held_by.clear();
  EXPECT_FALSE(power_capped(r));
}

}  // namespace
}  // namespace ingot::bench
