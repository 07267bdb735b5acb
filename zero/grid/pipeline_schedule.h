// The pipeline's schedule, as one source of truth for the trainer, `plan` and
// the bubble report: which blocks each stage holds, and for P stages and m
// micro-batches, each stage's ordered list of computations and the messages
// around them (docs/pipeline.md).
//
// Stage s receives micro-batch k's activation from stage s-1 before its
// Forward(k) and sends its output to s+1 after it; the gradient runs the other
// way around Backward(k). The first stage reads its input from the data (no
// RecvActivation, no SendGradient); the last stage computes the loss itself
// (no SendActivation, no RecvGradient).
//
// Schedules (both flush at the end of the step: every micro-batch's backward
// is done before the optimizer step, so the weights a micro-batch sees are
// the step's weights):
//   GPipe: every forward, then every backward, both in micro-batch order
//     k = 0..m-1 (gradients then flow in the order 1F1B sends them, so one
//     receive path serves both; micro-batches are separate passes, so no
//     autograd graph asks for the reverse). A stage holds all m micro-batches'
//     activations at its peak.
//   OneFOneB (PipeDream-Flush; Megatron-LM's non-interleaved schedule): stage
//     s first runs w = min(P - s - 1, m) forwards (warm-up), then alternates
//     one forward and one backward for the remaining m - w micro-batches,
//     then runs the w backwards left (cool-down). Backwards stay in
//     micro-batch order; a stage holds at most min(P - s, m) activations.
#pragma once
#include <string>
#include <vector>

#include "model/param_table.h"

namespace zt {

enum class PipelineSchedule { GPipe, OneFOneB };

// "gpipe", "1f1b": the config's spelling (parallel.pipeline_schedule).
const char* pipeline_schedule_name(PipelineSchedule schedule);
// The inverse; anything else throws std::invalid_argument in one line naming
// the value and the accepted ones.
PipelineSchedule parse_pipeline_schedule(const std::string& text);

enum class PipeOp { RecvActivation, Forward, SendActivation, RecvGradient, Backward, SendGradient };

struct PipeAction {
  PipeOp op;
  int micro_batch;
  bool operator==(const PipeAction& o) const { return op == o.op && micro_batch == o.micro_batch; }
  bool operator!=(const PipeAction& o) const { return !(*this == o); }
};

// "recv-activation", "forward", ...: for traces and error messages.
const char* pipe_op_name(PipeOp op);
// "forward 3": an action as error messages and test failures print it.
std::string describe(const PipeAction& action);
// The stage a message action exchanges with: s-1 for RecvActivation and
// SendGradient, s+1 for SendActivation and RecvGradient; -1 for computations.
int peer_stage(PipeOp op, int stage);

// Stage `stage`'s actions, in order, for `stages` stages and `micro_batches`
// micro-batches. Throws std::invalid_argument (one line) unless
// stages >= 1, 0 <= stage < stages and micro_batches >= 1.
std::vector<PipeAction> stage_actions(PipelineSchedule schedule, int stages, int stage,
                                      int micro_batches);
// The most micro-batches whose activations a stage's list holds at once
// (forward done, backward not yet): the activation slots it needs.
int peak_in_flight(const std::vector<PipeAction>& actions);
// Every stage's list, indexed by stage.
std::vector<std::vector<PipeAction>> pipeline_actions(PipelineSchedule schedule, int stages,
                                                      int micro_batches);

// Stage s holds blocks [first, first + count).
struct StageBlocks {
  int first = 0, count = 0;
};

// The L blocks cut into P contiguous stages, as evenly as possible: every
// stage gets L / P blocks and the first L % P stages one more. Extra blocks go
// to the front because the last stage also carries the tied head (the logits
// over the whole vocabulary and the cross-entropy), the heaviest work outside
// the blocks, while the first stage's embedding is a lookup. Throws
// std::invalid_argument (one line) when L < 1, P < 1 or P > L (a stage
// without a block).
std::vector<StageBlocks> split_blocks(int blocks, int stages);
// Stage `stage` of `stages` as its parameter table takes it (split_blocks' cut).
PipelineSplit stage_split(int blocks, int stages, int stage);

}  // namespace zt
