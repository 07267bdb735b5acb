// train/report/sitting_stats.h on cases worked out by hand: medians of odd and
// even counts, the bootstrap interval of the median (a point when every
// sitting agrees, the exact 2.5% and 97.5% quantiles of the resampled median
// where they can be computed), and the agreement of rankings over sittings.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tests/support/catch.h"
#include "train/report/sitting_stats.h"

namespace zt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// P(X >= k) for X ~ Binomial(n, p), summed term by term.
double binomial_at_least(int n, double p, int k) {
  double total = 0;
  for (int i = k; i <= n; i++)
    total += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                      i * std::log(p) + (n - i) * std::log1p(-p));
  return total;
}

TEST_CASE("median of odd and even counts, NaN left out", "[sittings]") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({7}) == 7);
  CHECK(median({4, 1, 3, 2}) == 2.5);  // (2 + 3) / 2
  CHECK(median({10, 1}) == 5.5);
  CHECK(median({1, kNaN, 3}) == 2);  // two values left
  CHECK_THROWS_AS(median({}), std::invalid_argument);
  CHECK_THROWS_AS(median({kNaN}), std::invalid_argument);
}

TEST_CASE("bootstrap interval: a point when the sittings agree", "[sittings]") {
  const Interval same = bootstrap_median_interval({1.25, 1.25, 1.25, 1.25}, 2000, 7, 0.95);
  CHECK(same.low == 1.25);
  CHECK(same.high == 1.25);
  const Interval one = bootstrap_median_interval({0.8}, 2000, 7, 0.95);
  CHECK(one.low == 0.8);
  CHECK(one.high == 0.8);
}

TEST_CASE("bootstrap interval of two sittings is [min, max]", "[sittings]") {
  // Resampled medians of {1, 3}: 1 (p 1/4), 2 (p 1/2), 3 (p 1/4); with 2000
  // resamples about 500 are 1 and 500 are 3, so the 50th smallest is 1 and the
  // 1950th is 3.
  const Interval i = bootstrap_median_interval({3, 1}, 2000, kBootstrapSeed, 0.95);
  CHECK(i.low == 1);
  CHECK(i.high == 3);
  const SittingSummary s = summarize_sittings({kNaN, 2, 4});
  CHECK(s.sittings == 2);
  CHECK(s.median == 3);
  CHECK(s.min == 2);
  CHECK(s.max == 4);
  CHECK(s.interval.low == 2);
  CHECK(s.interval.high == 4);
  CHECK(spread_percent(s) == 100);  // 4 / 2 - 1
}

TEST_CASE("bootstrap interval: the percentiles of the resampled median", "[sittings]") {
  // 101 sittings 1..101: a resample's median is its 51st smallest draw, so
  // P(median <= v) = P(at least 51 of 101 draws are <= v) = P(Bin(101, v/101) >= 51).
  // The exact 2.5% quantile is the smallest v where that reaches 0.025 (41),
  // the 97.5% quantile the smallest where it reaches 0.975 (61); 2000
  // resamples land within a value or two of them. The extreme resampled
  // medians (about 35 and 67) would not.
  std::vector<double> values;
  for (int v = 1; v <= 101; v++) values.push_back(v);
  int exact_low = 0, exact_high = 0;
  for (int v = 101; v >= 1; v--) {
    const double p = binomial_at_least(101, v / 101.0, 51);
    if (p >= 0.025) exact_low = v;
    if (p >= 0.975) exact_high = v;
  }
  REQUIRE(exact_low == 41);
  REQUIRE(exact_high == 61);
  const Interval i = bootstrap_median_interval(values, 2000, kBootstrapSeed, 0.95);
  CHECK(std::fabs(i.low - exact_low) <= 2);
  CHECK(std::fabs(i.high - exact_high) <= 2);
  CHECK(i.low <= median(values));
  CHECK(i.high >= median(values));
  // The same seed, the same interval: the report is reproducible.
  const Interval again = bootstrap_median_interval(values, 2000, kBootstrapSeed, 0.95);
  CHECK(again.low == i.low);
  CHECK(again.high == i.high);
}

TEST_CASE("bootstrap interval contains the median of a small uneven sample", "[sittings]") {
  const std::vector<double> v = {1.31, 1.02, 1.47, 1.18, 1.25, 0.97};
  const SittingSummary s = summarize_sittings(v);
  CHECK(s.median == Approx((1.18 + 1.25) / 2));
  CHECK(s.interval.low <= s.median);
  CHECK(s.interval.high >= s.median);
  CHECK(s.interval.low >= s.min);
  CHECK(s.interval.high <= s.max);
  CHECK_THROWS_AS(bootstrap_median_interval(v, 0, 1, 0.95), std::invalid_argument);
  CHECK_THROWS_AS(bootstrap_median_interval(v, 10, 1, 1.0), std::invalid_argument);
}

TEST_CASE("intervals overlap when they share a point", "[sittings]") {
  CHECK(intervals_overlap({1, 2}, {2, 3}));
  CHECK(intervals_overlap({1, 4}, {2, 3}));
  CHECK_FALSE(intervals_overlap({1, 1.9}, {2, 3}));
  CHECK_FALSE(intervals_overlap({2.1, 3}, {1, 2}));
}

TEST_CASE("same order in every sitting", "[sittings]") {
  CHECK(same_order_every_sitting({1, 2, 3}, {0.5, 1, 2}));
  CHECK_FALSE(same_order_every_sitting({1, 2, 3}, {0.5, 3, 2}));
  CHECK(same_order_every_sitting({1, kNaN, 3}, {0.5, 9, 2}));   // sitting 2 not shared
  CHECK_FALSE(same_order_every_sitting({1, kNaN}, {kNaN, 2}));  // nothing shared
  CHECK_FALSE(same_order_every_sitting({1, 2}, {1, 1}));        // a tie, then a lead
  CHECK(same_order_every_sitting({1, 1}, {1, 1}));              // tied throughout
}

TEST_CASE("ranking agreement on a hand-made comparison set", "[sittings]") {
  // Per-sitting speed-ups of four paths over three sittings; medians A 1,
  // B 1.5, C 1.05, D 1.45.
  //   pair  order in each sitting   agrees  medians apart > 10%
  //   A-B   B, B, B                 yes     yes (50%)
  //   A-C   C, A, C                 no      no (5%)
  //   A-D   D, D, D                 yes     yes (45%)
  //   B-C   B, B, C                 no      yes (43%)
  //   B-D   D, B, D                 no      no (3.4%)
  //   C-D   D, D, C                 no      yes (38%)
  const std::vector<std::vector<double>> items = {
      {1.0, 1.0, 1.0}, {1.5, 1.6, 1.4}, {1.05, 0.95, 1.5}, {1.52, 1.3, 1.45}};
  const RankingAgreement a = ranking_agreement(items, 0.10);
  CHECK(a.pairs == 6);
  CHECK(a.agreeing == 2);
  CHECK(a.wide_pairs == 4);
  CHECK(a.wide_agreeing == 2);
  // A path measured in no sitting that another was is in no pair.
  const RankingAgreement apart = ranking_agreement({{1, kNaN}, {kNaN, 2}}, 0.10);
  CHECK(apart.pairs == 0);
}

}  // namespace
}  // namespace zt
