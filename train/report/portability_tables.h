// What `zerotrain report --portability` writes: report_portability.csv (one
// row per configuration × system, enough to recompute every efficiency and PP
// by hand) and report_portability.md (a table per efficiency kind, the most
// portable configuration and what it costs each system).
#pragma once
#include <string>
#include <vector>

#include "train/report/portability.h"
#include "train/report/portability_runs.h"

namespace zt {

// Every configuration against every system, with both efficiencies and PPs.
struct PortabilityMatrix {
  std::vector<std::string> configs;  // the union of the systems' run names, sorted
  std::vector<PortabilitySystem> systems;
  std::vector<std::vector<int>>
      run_index;  // [config][system] into systems[s].runs; -1: did not run
  std::vector<double> best_tokens_per_second;            // per system
  std::vector<Efficiencies> application, architectural;  // [config][system]
  std::vector<size_t> systems_with_peak;                 // H of architectural efficiency
  std::vector<double> pp_application, pp_architectural;  // per config

  const PortabilityRun* run(size_t config, size_t system) const {
    const int i = run_index[config][system];
    return i < 0 ? nullptr : &systems[system].runs[static_cast<size_t>(i)];
  }
};

PortabilityMatrix portability_matrix(std::vector<PortabilitySystem> systems);

std::string portability_csv(const PortabilityMatrix& m);
// `plots` is the Markdown section that shows the cascade plots or says why not.
std::string portability_markdown(const PortabilityMatrix& m, const std::string& plots);

}  // namespace zt
