// A system that was not measured, in `zerotrain report --portability`: the
// step-time model's prediction (docs/step_time_model.md) of every
// configuration on an emulated cluster of N nodes x G ranks with links of a
// stated rate (--project NxG:RATE), labelled as a projection wherever it is
// shown. Each configuration is the measured run's own config.yaml at the
// projected world size with the same tokens per rank (weak scaling, as the
// study's systems run), and the compute its run stated (emulated) or measured.
#pragma once
#include <string>
#include <vector>

#include "train/report/portability_runs.h"

namespace zt {

struct ProjectedCluster {
  int nodes = 0, ranks_per_node = 0;
  double rate_bits_per_s = 0;
  std::string text;  // as given, "16x1:100mbit"
};

// "NxG:RATE" with RATE a number and kbit, mbit or gbit (tc's units). Throws
// std::runtime_error naming the text and what was expected.
ProjectedCluster parse_projected_cluster(const std::string& text);

// Every configuration of `measured` (its first system's run of it) predicted on
// `cluster`. Throws std::runtime_error naming the configuration when its
// config cannot be planned there.
PortabilitySystem project_system(const ProjectedCluster& cluster,
                                 const std::vector<PortabilitySystem>& measured);

}  // namespace zt
