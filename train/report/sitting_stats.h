// Statistics over repeated sittings of a sweep (scripts/sweep.sh --repeat):
// the median of per-sitting values, a bootstrap percentile interval for it,
// and how often the order of two configurations is the same in every sitting.
// Missing measurements are NaN and are left out.
#pragma once
#include <cstdint>
#include <vector>

namespace zt {

// The middle value, or the mean of the two middle values for an even count.
// NaNs are left out; throws std::invalid_argument when nothing is left.
double median(std::vector<double> values);

struct Interval {
  double low = 0, high = 0;
};

// The bootstrap percentile interval of the median: `resamples` times, draw as
// many values as there are (NaNs left out) with replacement, uniformly, from a
// mt19937_64 seeded with `seed`, and take the median; the interval is the
// nearest-rank (1 - level) / 2 and (1 + level) / 2 quantiles of those medians
// (the ceil(q x resamples)-th smallest). Throws std::invalid_argument when no
// value is left, resamples < 1 or level is outside (0, 1).
Interval bootstrap_median_interval(const std::vector<double>& values, int resamples, uint64_t seed,
                                   double level);

// What report prints for one speed-up: median, bootstrap interval, extremes.
struct SittingSummary {
  int sittings = 0;  // values that are not NaN
  double median = 0, min = 0, max = 0;
  Interval interval;
};

// 2000 resamples, seed kBootstrapSeed, 95%: report's fixed choice, so that the
// same runs give the same report.
constexpr int kBootstrapResamples = 2000;
constexpr uint64_t kBootstrapSeed = 20250221;
constexpr double kIntervalLevel = 0.95;
SittingSummary summarize_sittings(const std::vector<double>& values);

// Spread across sittings in percent: (max / min - 1) x 100.
double spread_percent(const SittingSummary& s);

// Whether two intervals share a point (their configurations are not separated).
bool intervals_overlap(const Interval& a, const Interval& b);

// Whether a and b (one value per sitting, NaN where not measured) are in the
// same order in every sitting both were measured in (a tie is an order of its
// own). Pairs that share no sitting have no order: false.
bool same_order_every_sitting(const std::vector<double>& a, const std::vector<double>& b);

// Over all pairs of items (items[i][k]: item i's value in sitting k) that
// share a sitting: how many pairs there are and how many are in the same order
// in every sitting; "wide" counts only the pairs whose medians differ by more
// than wide_gap (max / min - 1 > wide_gap, e.g. 0.10).
struct RankingAgreement {
  int pairs = 0, agreeing = 0;
  int wide_pairs = 0, wide_agreeing = 0;
};
RankingAgreement ranking_agreement(const std::vector<std::vector<double>>& items, double wide_gap);

}  // namespace zt
