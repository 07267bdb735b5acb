// The makespan of a flushed pipeline step (1F1B or GPipe) with uniform stage
// times, from the simulator (pipeline_simulator.h): what the grid's step-time
// model needs of the pipeline schedules.
#pragma once

#include <vector>

#include "zero/grid/pipeline_schedule.h"

namespace zt {

// Seconds from the first forward to the last stage's last backward, for
// `stages` stages and `micro_batches` micro-batches, each forward forward_s and
// each backward backward_s on every stage, each message across boundary p
// (stages p and p + 1) boundary_message_s[p] on a free link (empty: no time).
// Throws std::invalid_argument (one line) for sizes below 1.
double pipeline_makespan(PipelineSchedule schedule, int stages, int micro_batches, double forward_s,
                         double backward_s, const std::vector<double>& boundary_message_s);

}  // namespace zt
