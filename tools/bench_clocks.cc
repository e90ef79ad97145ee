#include "bench_clocks.h"

#include <cmath>
#include <sstream>

#include "bench_stats.h"

namespace ingot::bench {

namespace {

// Millijoules a run, or a negative value when the energy or the runs are unknown.
double millijoules_a_run(const DeviceClockReport& r, size_t runs) {
  return r.energy_j >= 0 && runs > 0 ? 1000.0 * r.energy_j / double(runs) : -1.0;
}

}  // namespace

std::string describe_clocks(const DeviceClockReport& r, size_t runs) {
  if (r.samples == 0) return "no sample taken";
  auto whole = [](double v) { return std::to_string(std::lround(v)); };
  std::ostringstream s;
  s << "SM " << whole(r.sm_mhz_median) << " MHz median (lowest " << whole(r.sm_mhz_min);
  if (r.sm_mhz_max > 0) s << ", maximum " << whole(r.sm_mhz_max);
  s << "), " << whole(r.power_w_median) << " W median (highest " << whole(r.power_w_max);
  if (r.power_limit_w > 0) s << ", limit " << whole(r.power_limit_w) << " W";
  s << "), ";
  if (const double mj = millijoules_a_run(r, runs); mj >= 0) s << fixed(mj, 1) << " mJ a run, ";
  s << r.samples << " sample" << (r.samples == 1 ? "" : "s") << "; ";
  if (r.held_by.empty()) return s.str() + "clock not held below its maximum";
  s << "clock held below its maximum by:";
  for (size_t i = 0; i < r.held_by.size(); ++i)
    s << (i ? ", " : " ") << r.held_by[i].first << " " << whole(100.0 * r.held_by[i].second) << " %";
  return s.str();
}

nlohmann::json clocks_json(const DeviceClockReport& r, size_t runs) {
  nlohmann::json held = nlohmann::json::object();
  for (const auto& [reason, share] : r.held_by) held[reason] = share;
  return {{"samples", r.samples},           {"sm_mhz_median", r.sm_mhz_median}, {"sm_mhz_min", r.sm_mhz_min},
          {"sm_mhz_max", r.sm_mhz_max},     {"power_w_median", r.power_w_median}, {"power_w_max", r.power_w_max},
          {"power_limit_w", r.power_limit_w}, {"held_by", held},
          {"energy_j", r.energy_j >= 0 ? nlohmann::json(r.energy_j) : nlohmann::json(nullptr)},
          {"millijoules_per_run", millijoules_a_run(r, runs) >= 0 ? nlohmann::json(millijoules_a_run(r, runs))
                                                                   : nlohmann::json(nullptr)}};
}

bool power_capped(const DeviceClockReport& r) {
  for (const auto& [reason, share] : r.held_by)
    if (reason == "power cap" && share >= 0.5) return true;
  return false;
}

}  // namespace ingot::bench
