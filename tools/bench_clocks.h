// How `ingot bench` reports a GPU's clocks over the timed runs (DeviceClockReport): one line of
// text and a JSON object, and whether the power limit held the clock down, in which case the
// times depend on the energy a run takes (unit-tested in tests/unit/bench_clocks_test.cc).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/device.h"

namespace ingot::bench {

// "SM 1725 MHz median (lowest 1515, maximum 1980), 691 W median (highest 702, limit 700 W),
// 991.2 mJ a run, 163 samples; clock held below its maximum by: power cap 100 %", where `runs`
// is the number of runs the span timed (the energy a run left out when unknown or no runs).
std::string describe_clocks(const DeviceClockReport& r, size_t runs);

nlohmann::json clocks_json(const DeviceClockReport& r, size_t runs);

// The power cap held the clock down in at least half of the samples.
bool power_capped(const DeviceClockReport& r);

}  // namespace ingot::bench
