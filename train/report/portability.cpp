#include "train/report/portability.h"

#include <algorithm>

namespace zt {

double performance_portability(const Efficiencies& efficiencies) {
  if (efficiencies.empty()) return 0;
  double inverse_sum = 0;
  for (const std::optional<double>& e : efficiencies) {
    if (!e || !(*e > 0)) return 0;
    inverse_sum += 1.0 / *e;
  }
  return static_cast<double>(efficiencies.size()) / inverse_sum;
}

Efficiencies application_efficiencies(const std::vector<std::optional<double>>& tokens_per_second) {
  double best = 0;
  for (const std::optional<double>& t : tokens_per_second)
    if (t) best = std::max(best, *t);
  Efficiencies out;
  for (const std::optional<double>& t : tokens_per_second)
    out.push_back(t && best > 0 ? std::optional<double>(*t / best) : std::nullopt);
  return out;
}

}  // namespace zt
