// Latency statistics of `ingot bench` and the agreement metrics of `ingot compare`
// (tools/bench_stats.h). Expected values are numpy's: np.percentile (method "linear"),
// np.std (ddof=0), np.mean.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../../tools/bench_stats.h"

using namespace ingot::bench;

TEST(BenchStats, PercentileLinearLikeNumpy) {
  std::vector<double> a = {50, 15, 40, 20, 35};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(percentile(a, 0), 15.0);
  EXPECT_DOUBLE_EQ(percentile(a, 40), 29.0);
  EXPECT_DOUBLE_EQ(percentile(a, 50), 35.0);
  EXPECT_DOUBLE_EQ(percentile(a, 90), 46.0);
  EXPECT_DOUBLE_EQ(percentile(a, 95), 48.0);
  EXPECT_NEAR(percentile(a, 99), 49.6, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(a, 100), 50.0);
}

TEST(BenchStats, PercentileEdgeCases) {
  EXPECT_DOUBLE_EQ(percentile({7.0}, 0), 7.0);
  EXPECT_DOUBLE_EQ(percentile({7.0}, 50), 7.0);
  EXPECT_DOUBLE_EQ(percentile({7.0}, 99), 7.0);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 50), 1.5);
  // Out-of-range q is clamped.
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3}, 150), 3.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3}, -5), 1.0);
}

TEST(BenchStats, SummarizeMatchesNumpy) {
  std::vector<double> b = {3, 1, 4, 1, 5, 9, 2, 6};
  LatencyStats s = summarize(b);
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.total, 31.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.875);
  EXPECT_DOUBLE_EQ(s.median, 3.5);
  EXPECT_NEAR(s.p90, 6.9, 1e-12);
  EXPECT_NEAR(s.p95, 7.95, 1e-12);
  EXPECT_NEAR(s.p99, 8.79, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_NEAR(s.stddev, 2.5708704751503917, 1e-12);  // np.std, ddof=0
}

TEST(BenchStats, SummarizeConstantAndEmpty) {
  LatencyStats c = summarize({2, 2, 2, 2});
  EXPECT_DOUBLE_EQ(c.stddev, 0.0);
  EXPECT_DOUBLE_EQ(c.p99, 2.0);
  LatencyStats e = summarize({});
  EXPECT_EQ(e.count, 0u);
  EXPECT_DOUBLE_EQ(e.mean, 0.0);
  EXPECT_DOUBLE_EQ(per_second(0), 0.0);
  EXPECT_DOUBLE_EQ(per_second(4.0), 250.0);
}

TEST(BenchStats, AgreementIdentical) {
  std::vector<double> a = {1, -2, 3, 0.5, 0.25, -1};
  Agreement r = agree(a, a, 1e-5, 1e-5, 3);
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.count, 6);
  EXPECT_DOUBLE_EQ(r.max_abs, 0.0);
  EXPECT_DOUBLE_EQ(r.max_rel, 0.0);
  EXPECT_DOUBLE_EQ(r.mean_abs, 0.0);
  EXPECT_NEAR(r.cosine, 1.0, 1e-15);
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.rows_agree, 2);
}

TEST(BenchStats, AgreementPolygraphyRule) {
  // |a - b| <= atol + rtol * |b|
  std::vector<double> b = {1.0, 100.0, 0.0};
  std::vector<double> a = {1.0 + 1.5e-5, 100.0 + 9e-4, 1e-6};
  Agreement ok = agree(a, b, 1e-5, 1e-5);
  EXPECT_TRUE(ok.pass()) << ok.violations;  // 1.5e-5 <= 2e-5, 9e-4 <= 1.01e-3, 1e-6 <= 1e-5
  EXPECT_NEAR(ok.max_abs, 9e-4, 1e-12);
  EXPECT_NEAR(ok.max_rel, 1.5e-5, 1e-9);  // the 0 reference is left out
  std::vector<double> bad = {1.0 + 3e-5, 100.0, 0.0};
  Agreement no = agree(bad, b, 1e-5, 1e-5);
  EXPECT_FALSE(no.pass());
  EXPECT_EQ(no.violations, 1);
  EXPECT_EQ(no.first_violation, 0);
}

TEST(BenchStats, AgreementCosineArgmaxAndNaN) {
  Agreement r = agree({1, 2, 3}, {1, 2.5, -3}, 1e-5, 1e-5, 3);
  EXPECT_NEAR(r.cosine, -0.1988980632395388, 1e-12);
  EXPECT_EQ(r.rows, 1);
  EXPECT_EQ(r.rows_agree, 0);  // argmax 2 vs 1
  EXPECT_NEAR(r.mean_abs, (0 + 0.5 + 6) / 3.0, 1e-12);

  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(agree({nan, 1}, {nan, 1}, 0, 0).pass());
  Agreement n = agree({nan, 1}, {0, 1}, 1, 1);
  EXPECT_FALSE(n.pass());
  EXPECT_EQ(n.nan_mismatch, 1);
  EXPECT_TRUE(std::isinf(n.max_abs) && std::isinf(n.max_rel) && std::isinf(n.mean_abs));
  EXPECT_TRUE(std::isnan(n.cosine));
  Agreement all = agree({nan, nan}, {1, 2}, 1, 1);  // nothing compared as numbers: nothing looks clean
  EXPECT_TRUE(std::isinf(all.mean_abs));
  EXPECT_TRUE(std::isnan(all.cosine));
  EXPECT_DOUBLE_EQ(agree({0, 0}, {0, 0}, 0, 0).cosine, 1.0);
  EXPECT_DOUBLE_EQ(agree({0, 0}, {1, 0}, 0, 0).cosine, 0.0);
}

TEST(BenchStats, MarkdownTable) {
  std::string t = markdown_table({"a", "bb"}, {false, true}, {{"x", "1.5"}, {"long", "2"}});
  EXPECT_EQ(t,
            "| a    |  bb |\n"
            "| ---- | --: |\n"
            "| x    | 1.5 |\n"
            "| long |   2 |\n");
  EXPECT_EQ(fixed(1.23456, 2), "1.23");
  EXPECT_EQ(fixed(std::nan(""), 2), "-");
}
