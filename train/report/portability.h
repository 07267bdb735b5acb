// The Pennycook–Sewall–Lee performance-portability metric over a set of
// systems (`zerotrain report --portability`):
//
//   PP(a, p, H) = |H| / Σ_{i∈H} 1 / e_i(a, p)   if configuration a ran on every system i of H,
//               = 0                              otherwise,
//
// the harmonic mean of a's efficiencies e_i on the systems of H. Two
// efficiencies feed it: application efficiency (a's tok/s over the best tok/s
// of any configuration on the same system) and architectural efficiency (a's
// model FLOP/s over the system's peak FLOP/s).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace zt {

// One efficiency per system of H; nullopt: the configuration did not run there.
using Efficiencies = std::vector<std::optional<double>>;

// PP over every system of `efficiencies`: 0 when one is missing (or not
// positive) or H is empty; with one system, that system's efficiency.
double performance_portability(const Efficiencies& efficiencies);

// Application efficiencies on one system: each configuration's tok/s over the
// best tok/s of any configuration there (the best gets exactly 1); nullopt
// stays nullopt.
Efficiencies application_efficiencies(const std::vector<std::optional<double>>& tokens_per_second);

}  // namespace zt
