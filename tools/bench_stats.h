// Latency statistics of `ingot bench`, and the tolerance checks of `ingot compare`: plain
// functions on vectors of doubles, with no dependency on the rest of ingot (unit-tested in
// tests/unit/bench_stats_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ingot::bench {

// The q-th percentile (0..100) of `sorted` (ascending, non-empty), interpolated linearly
// between the two nearest ranks: numpy.percentile's default method ("linear"), i.e. position
// q/100 * (n-1). Returns NaN for an empty vector.
double percentile_sorted(const std::vector<double>& sorted, double q);
// The same on unsorted values (sorts a copy).
double percentile(std::vector<double> values, double q);

struct LatencyStats {
  size_t count = 0;
  double total = 0;  // sum of the latencies
  double mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, min = 0, max = 0;
  double stddev = 0;  // population standard deviation (numpy.std, ddof=0)
};

// Summary of latencies (any unit; ingot uses milliseconds). All zeros for no values.
LatencyStats summarize(const std::vector<double>& latencies);

// Inferences per second for a mean latency in milliseconds (0 when the mean is 0).
double per_second(double mean_ms);

// Element-wise agreement of two arrays (a: tested, b: reference), read as doubles.
struct Agreement {
  int64_t count = 0;
  // Where one side has a NaN and the other a number (nan_mismatch > 0), max_abs, max_rel and
  // mean_abs are infinite and cosine NaN: a summary over the other elements would look clean.
  double max_abs = 0;   // max |a - b|
  double max_rel = 0;   // max |a - b| / |b| over elements with b != 0
  double mean_abs = 0;  // mean |a - b|
  double cosine = 1;    // a.b / (|a| |b|); 1 when both are all zeros, 0 when only one is
  int64_t violations = 0;  // elements failing |a - b| <= atol + rtol * |b| (Polygraphy's rule)
  int64_t first_violation = -1;  // index of the first one, -1 when none
  int64_t nan_mismatch = 0;  // elements NaN on one side only (counted as violations)
  // Rows (over the last axis) whose argmax agrees; rows = 0 when not computed.
  int64_t rows = 0, rows_agree = 0;
  bool pass() const { return violations == 0; }
};

// Compares a and b (same size). NaN equals NaN at the same place; +-inf equal the same inf.
// `row` > 0 also computes argmax agreement over consecutive rows of that length.
Agreement agree(const std::vector<double>& a, const std::vector<double>& b, double atol, double rtol,
                int64_t row = 0);

// A Markdown table: "| a | b |", "|---|---:|", rows; `right` marks right-aligned columns.
std::string markdown_table(const std::vector<std::string>& header, const std::vector<bool>& right,
                           const std::vector<std::vector<std::string>>& rows);

// "%.3f"-style fixed formatting with `digits` decimals; "-" for NaN.
std::string fixed(double v, int digits);
// Compact scientific/general formatting ("%.3g"); "-" for NaN.
std::string general(double v, int digits = 3);

}  // namespace ingot::bench
