// A deterministic event simulation of a pipeline schedule's per-stage action
// lists (zero/grid/pipeline_schedule.h): what the schedule costs in time and
// memory before any rank runs it, and the check that it cannot hang
// (docs/pipeline.md, "The simulator").
//
// Rules:
// - Each stage runs its list in order, one action at a time, from time 0.
// - Forward takes forward_s, Backward backward_s, on every stage.
// - A send is posted and the stage moves on at once (MPI_Isend: the buffer is
//   kept until delivery, so a send never waits for its receive); its message
//   arrives at the peer message_s later, message_s being its transfer time:
//   the link between two stages carries one message at a time in each
//   direction, so a message posted while the one before it in its direction
//   is still in flight starts when that one arrives (GPipe's bursts queue).
// - A receive waits until the matching send's message (same kind, same
//   micro-batch, from the peer stage) has arrived.
// - When no stage can take its next action and some have actions left, the
//   lists deadlock; the simulation throws std::runtime_error in one line that
//   names each blocked stage and what it waits for.
// Lists that break the pipeline's invariants (a message to a stage that does
// not exist, the same message sent or received twice, a send nobody
// receives, a micro-batch's forward run twice, a backward before its
// forward) throw std::runtime_error in one line as well.
#pragma once
#include <vector>

#include "zero/grid/pipeline_schedule.h"

namespace zt {

struct PipelineTimes {
  double forward_s = 0;   // one micro-batch's forward through one stage
  double backward_s = 0;  // one micro-batch's backward through one stage
  double message_s = 0;   // a message's transfer time, on a free link from posting to arrival
  // When given (one per boundary, p between stages p and p + 1): the
  // transfer time of that boundary's messages instead of message_s.
  std::vector<double> boundary_message_s;
};

struct PipelineSimulation {
  double makespan_s = 0;       // time 0 to the last action of the last stage to finish
  std::vector<double> busy_s;  // per stage: time in forwards and backwards
  std::vector<double> idle_s;  // per stage: makespan - busy, the stage's bubble
  double bubble_fraction = 0;  // all stages' idle time over stages x makespan
  // Per stage: the most micro-batches whose activations it held at once
  // (forward done, backward not yet).
  std::vector<int> peak_held;
  // Per stage and action, parallel to the lists: when the action finished
  // (a send: when it was posted; a receive: when its message was taken).
  std::vector<std::vector<double>> done_s;
};

PipelineSimulation simulate_pipeline(const std::vector<std::vector<PipeAction>>& stages,
                                     const PipelineTimes& times);

}  // namespace zt
