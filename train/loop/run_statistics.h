// What a run measured, agreed over its ranks for the summary: the compute
// medians of the slowest rank and the job's mean inter-node bytes. Every rank
// calls these (each is one MPI_Allreduce over the world).
#pragma once
#include <vector>

#include "train/io/run_outputs.h"
#include "zero/comm/comm_stats.h"

namespace zt {

// The median over the steps after the first (the first sets up buffers and
// connections) of each step's slowest rank: every collective waits for it, so
// the step's compute is its compute. Every rank has the same steps.
ComputeSample compute_medians(std::vector<ComputeSample> v);

// This rank's counts, with the inter-node bytes averaged over the ranks
// (each rank counts what it sends across; the summary speaks for the job).
CommStats with_job_mean_inter_node(CommStats c, int world);

}  // namespace zt
