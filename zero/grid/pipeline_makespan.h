// The makespan of a flushed 1F1B step with uniform stage times, from the
// simulator (pipeline_simulator.h): what the grid's step-time model needs of
// the pipeline schedules.
#pragma once

namespace zt {

// Seconds from the first forward to the last stage's last backward, for
// `stages` stages and `micro_batches` micro-batches, each forward forward_s and
// each backward backward_s on every stage, every message message_s from post to
// arrival. Throws std::invalid_argument (one line) for sizes below 1.
double one_f_one_b_makespan(int stages, int micro_batches, double forward_s, double backward_s,
                            double message_s);

}  // namespace zt
