// A network preset (configs/networks/*.json) read as a cluster for the grid
// step-time model (zero/analysis/grid_step_time.h): the link figures
// read_network_file reads, and the preset's GPUs per node, device memory,
// achieved compute rate and memory bandwidth, each with where it came from.
#pragma once
#include <string>
#include <vector>

#include "zero/analysis/grid_step_time.h"

namespace zt {

struct GridClusterFile {
  GridCluster cluster;
  std::string preset;                    // the preset's own description
  double peak_flops_per_s = 0;           // the datasheet peak; 0 when the preset lists none
  std::vector<std::string> assumptions;  // what the figures are and where each came from
};

// Throws ConfigError (one line naming the file and key) for a file that is not
// a preset (a commbench curve or a cluster.json has no per-GPU figures), a
// missing gpus_per_node, or a figure that is not a positive number. Absent
// figures take stated defaults: device memory 80 GB (H100 SXM), memory
// bandwidth 3.35 TB/s (H100 SXM HBM3), the achieved rate 40% of the peak.
GridClusterFile read_grid_cluster(const std::string& path, int nodes);

}  // namespace zt
