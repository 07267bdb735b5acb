#include "train/report/sitting_stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace zt {
namespace {

std::vector<double> measured(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values)
    if (!std::isnan(v)) out.push_back(v);
  return out;
}

// A uniform index below n from the generator's raw output (rejection of the
// last partial block), so that the draws, unlike std::uniform_int_distribution's,
// are the same with every standard library.
size_t uniform_index(std::mt19937_64& rng, size_t n) {
  const uint64_t limit = std::mt19937_64::max() - std::mt19937_64::max() % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return static_cast<size_t>(x % n);
}

int sign(double x) { return (x > 0) - (x < 0); }

}  // namespace

double median(std::vector<double> values) {
  values = measured(values);
  if (values.empty()) throw std::invalid_argument("median of no values");
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

Interval bootstrap_median_interval(const std::vector<double>& values, int resamples, uint64_t seed,
                                   double level) {
  const std::vector<double> v = measured(values);
  if (v.empty()) throw std::invalid_argument("bootstrap interval of no values");
  if (resamples < 1) throw std::invalid_argument("bootstrap interval needs resamples >= 1");
  if (!(level > 0 && level < 1)) throw std::invalid_argument("interval level outside (0, 1)");
  std::mt19937_64 rng(seed);
  std::vector<double> medians(static_cast<size_t>(resamples));
  std::vector<double> draw(v.size());
  for (double& m : medians) {
    for (double& d : draw) d = v[uniform_index(rng, v.size())];
    m = median(draw);
  }
  std::sort(medians.begin(), medians.end());
  // Nearest rank: the ceil(q * B)-th smallest, at least the first.
  const auto quantile = [&](double q) {
    const double rank = std::ceil(q * resamples - 1e-9);
    return medians[static_cast<size_t>(std::max(1.0, rank)) - 1];
  };
  return {quantile((1 - level) / 2), quantile((1 + level) / 2)};
}

SittingSummary summarize_sittings(const std::vector<double>& values) {
  const std::vector<double> v = measured(values);
  SittingSummary s;
  s.sittings = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.median = median(v);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.interval = bootstrap_median_interval(v, kBootstrapResamples, kBootstrapSeed, kIntervalLevel);
  return s;
}

double spread_percent(const SittingSummary& s) { return (s.max / s.min - 1) * 100; }

bool intervals_overlap(const Interval& a, const Interval& b) {
  return a.low <= b.high && b.low <= a.high;
}

bool same_order_every_sitting(const std::vector<double>& a, const std::vector<double>& b) {
  bool seen = false;
  int order = 0;
  for (size_t k = 0; k < std::min(a.size(), b.size()); k++) {
    if (std::isnan(a[k]) || std::isnan(b[k])) continue;
    const int o = sign(a[k] - b[k]);
    if (seen && o != order) return false;
    seen = true;
    order = o;
  }
  return seen;
}

RankingAgreement ranking_agreement(const std::vector<std::vector<double>>& items, double wide_gap) {
  RankingAgreement r;
  for (size_t i = 0; i < items.size(); i++) {
    for (size_t j = i + 1; j < items.size(); j++) {
      bool shared = false;
      for (size_t k = 0; k < std::min(items[i].size(), items[j].size()); k++)
        shared = shared || (!std::isnan(items[i][k]) && !std::isnan(items[j][k]));
      if (!shared) continue;
      const bool agrees = same_order_every_sitting(items[i], items[j]);
      const double mi = median(items[i]), mj = median(items[j]);
      const bool wide = std::max(mi, mj) / std::min(mi, mj) - 1 > wide_gap;
      r.pairs++;
      r.agreeing += agrees;
      r.wide_pairs += wide;
      r.wide_agreeing += wide && agrees;
    }
  }
  return r;
}

}  // namespace zt
