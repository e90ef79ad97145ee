#include "bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ingot::bench {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 100.0);
  double pos = q / 100.0 * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, q);
}

LatencyStats summarize(const std::vector<double>& latencies) {
  LatencyStats s;
  if (latencies.empty()) return s;
  std::vector<double> v = latencies;
  std::sort(v.begin(), v.end());
  s.count = v.size();
  for (double x : v) s.total += x;
  s.mean = s.total / double(s.count);
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(ss / double(s.count));
  s.min = v.front();
  s.max = v.back();
  s.median = percentile_sorted(v, 50);
  s.p90 = percentile_sorted(v, 90);
  s.p95 = percentile_sorted(v, 95);
  s.p99 = percentile_sorted(v, 99);
  return s;
}

double per_second(double mean_ms) { return mean_ms > 0 ? 1000.0 / mean_ms : 0.0; }

Agreement agree(const std::vector<double>& a, const std::vector<double>& b, double atol, double rtol, int64_t row) {
  Agreement r;
  size_t n = std::min(a.size(), b.size());
  r.count = int64_t(n);
  double sum_abs = 0, dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn || yn) {
      if (xn != yn) {  // a NaN against a number differs without bound
        ++r.nan_mismatch;
        ++r.violations;
        if (r.first_violation < 0) r.first_violation = int64_t(i);
        r.max_abs = r.max_rel = sum_abs = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    double d;
    if (std::isinf(x) || std::isinf(y)) {
      d = x == y ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      d = std::fabs(x - y);
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
    sum_abs += d;
    r.max_abs = std::max(r.max_abs, d);
    if (y != 0 && !std::isinf(y)) r.max_rel = std::max(r.max_rel, d / std::fabs(y));
    if (!(d <= atol + rtol * std::fabs(y))) {
      ++r.violations;
      if (r.first_violation < 0) r.first_violation = int64_t(i);
    }
  }
  r.mean_abs = n ? sum_abs / double(n) : 0.0;
  if (r.nan_mismatch) r.cosine = std::numeric_limits<double>::quiet_NaN();  // undefined
  else if (na == 0 && nb == 0) r.cosine = 1.0;
  else if (na == 0 || nb == 0) r.cosine = 0.0;
  else r.cosine = dot / (std::sqrt(na) * std::sqrt(nb));
  if (row > 0 && n > 0 && n % size_t(row) == 0) {
    for (size_t start = 0; start < n; start += size_t(row)) {
      auto argmax = [&](const std::vector<double>& v) {
        size_t best = start;
        for (size_t i = start; i < start + size_t(row); ++i) {
          // numpy.argmax: the first maximum; NaN wins (it is the first NaN).
          if (std::isnan(v[i])) return i;
          if (v[i] > v[best]) best = i;
        }
        return best;
      };
      ++r.rows;
      if (argmax(a) == argmax(b)) ++r.rows_agree;
    }
  }
  return r;
}

std::string markdown_table(const std::vector<std::string>& header, const std::vector<bool>& right,
                           const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size(), 3);
  for (size_t c = 0; c < header.size(); ++c) w[c] = std::max(w[c], header[c].size());
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto cell = [&](const std::string& s, size_t c) {
    bool r = c < right.size() && right[c];
    std::string pad(w[c] - std::min(w[c], s.size()), ' ');
    std::string out(1, ' ');
    out.append(r ? pad : s);
    out.append(r ? s : pad);
    out.append(" |");
    return out;
  };
  std::string out = "|";
  for (size_t c = 0; c < header.size(); ++c) out += cell(header[c], c);
  out += "\n|";
  for (size_t c = 0; c < header.size(); ++c) {
    bool r = c < right.size() && right[c];
    out.push_back(' ');
    out.append(r ? w[c] - 1 : w[c], '-');
    if (r) out.push_back(':');
    out.append(" |");
  }
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (size_t c = 0; c < header.size(); ++c) out += cell(c < row.size() ? row[c] : "", c);
    out += "\n";
  }
  return out;
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string general(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace ingot::bench
