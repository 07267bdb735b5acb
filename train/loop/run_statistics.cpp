#include "train/loop/run_statistics.h"

#include <mpi.h>

#include <algorithm>

namespace zt {

ComputeSample compute_medians(std::vector<ComputeSample> v) {
  if (v.size() > 1) v.erase(v.begin());
  auto median = [&](double ComputeSample::*field) {
    std::vector<double> mine, slowest(v.size());
    for (const ComputeSample& c : v) mine.push_back(c.*field);
    MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    std::sort(slowest.begin(), slowest.end());
    return slowest.empty() ? 0.0 : slowest[slowest.size() / 2];
  };
  return {median(&ComputeSample::micro_step_ms), median(&ComputeSample::optimizer_ms)};
}

CommStats with_job_mean_inter_node(CommStats c, int world) {
  std::vector<double> v;
  for (auto& p : c.by_primitive) v.push_back(p.inter_node_bus_bytes);
  for (auto& u : c.by_purpose)
    for (auto& p : u) v.push_back(p.inter_node_bus_bytes);
  for (auto& u : c.by_dimension)
    for (auto& p : u) v.push_back(p.inter_node_bus_bytes);
  std::vector<double> sum(v.size());
  MPI_Allreduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  size_t i = 0;
  for (auto& p : c.by_primitive) p.inter_node_bus_bytes = sum[i++] / world;
  for (auto& u : c.by_purpose)
    for (auto& p : u) p.inter_node_bus_bytes = sum[i++] / world;
  for (auto& u : c.by_dimension)
    for (auto& p : u) p.inter_node_bus_bytes = sum[i++] / world;
  return c;
}

}  // namespace zt
