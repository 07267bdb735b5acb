#include "zero/grid/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace zt {

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::GPipe: return "gpipe";
    case PipelineSchedule::OneFOneB: return "1f1b";
  }
  return "?";
}

PipelineSchedule parse_pipeline_schedule(const std::string& text) {
  for (PipelineSchedule s : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB})
    if (text == pipeline_schedule_name(s)) return s;
  throw std::invalid_argument("pipeline schedule: expected one of gpipe, 1f1b, got '" + text + "'");
}

const char* pipe_op_name(PipeOp op) {
  switch (op) {
    case PipeOp::RecvActivation: return "recv-activation";
    case PipeOp::Forward: return "forward";
    case PipeOp::SendActivation: return "send-activation";
    case PipeOp::RecvGradient: return "recv-gradient";
    case PipeOp::Backward: return "backward";
    case PipeOp::SendGradient: return "send-gradient";
  }
  return "?";
}

std::string describe(const PipeAction& action) {
  return std::string(pipe_op_name(action.op)) + " " + std::to_string(action.micro_batch);
}

int peer_stage(PipeOp op, int stage) {
  switch (op) {
    case PipeOp::RecvActivation:
    case PipeOp::SendGradient: return stage - 1;
    case PipeOp::SendActivation:
    case PipeOp::RecvGradient: return stage + 1;
    case PipeOp::Forward:
    case PipeOp::Backward: return -1;
  }
  return -1;
}

namespace {

// Appends one micro-batch's forward or backward with the messages around it;
// which messages a stage has depends only on whether it is first or last.
struct StageListBuilder {
  bool first, last;
  std::vector<PipeAction> actions;

  void forward(int k) {
    if (!first) actions.push_back({PipeOp::RecvActivation, k});
    actions.push_back({PipeOp::Forward, k});
    if (!last) actions.push_back({PipeOp::SendActivation, k});
  }
  void backward(int k) {
    if (!last) actions.push_back({PipeOp::RecvGradient, k});
    actions.push_back({PipeOp::Backward, k});
    if (!first) actions.push_back({PipeOp::SendGradient, k});
  }
};

void check_shape(int stages, int micro_batches) {
  if (stages < 1)
    throw std::invalid_argument("pipeline: expected at least 1 stage, got " +
                                std::to_string(stages));
  if (micro_batches < 1)
    throw std::invalid_argument("pipeline: expected at least 1 micro-batch, got " +
                                std::to_string(micro_batches));
}

}  // namespace

std::vector<PipeAction> stage_actions(PipelineSchedule schedule, int stages, int stage,
                                      int micro_batches) {
  check_shape(stages, micro_batches);
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument("pipeline: stage " + std::to_string(stage) + " out of range 0.." +
                                std::to_string(stages - 1));
  StageListBuilder b{stage == 0, stage == stages - 1, {}};
  if (schedule == PipelineSchedule::GPipe) {
    for (int k = 0; k < micro_batches; k++) b.forward(k);
    for (int k = 0; k < micro_batches; k++) b.backward(k);
    return b.actions;
  }
  // 1F1B: a stage runs ahead by as many forwards as there are stages after
  // it, so that the gradient of its first micro-batch arrives just as its
  // warm-up ends.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; next_forward++) b.forward(next_forward);
  for (; next_forward < micro_batches; next_forward++, next_backward++) {
    b.forward(next_forward);
    b.backward(next_backward);
  }
  for (; next_backward < micro_batches; next_backward++) b.backward(next_backward);
  return b.actions;
}

int peak_in_flight(const std::vector<PipeAction>& actions) {
  int held = 0, peak = 0;
  for (const PipeAction& a : actions) {
    held += a.op == PipeOp::Forward ? 1 : a.op == PipeOp::Backward ? -1 : 0;
    peak = std::max(peak, held);
  }
  return peak;
}

std::vector<std::vector<PipeAction>> pipeline_actions(PipelineSchedule schedule, int stages,
                                                      int micro_batches) {
  check_shape(stages, micro_batches);
  std::vector<std::vector<PipeAction>> all;
  for (int s = 0; s < stages; s++) all.push_back(stage_actions(schedule, stages, s, micro_batches));
  return all;
}

std::vector<StageBlocks> split_blocks(int blocks, int stages) {
  if (blocks < 1)
    throw std::invalid_argument("pipeline: the model needs at least one block, got " +
                                std::to_string(blocks));
  if (stages < 1 || stages > blocks)
    throw std::invalid_argument("parallel.pipeline: expected 1.." + std::to_string(blocks) +
                                " stages (each stage holds at least one of the " +
                                std::to_string(blocks) + " blocks), got " + std::to_string(stages));
  std::vector<StageBlocks> split(stages);
  const int base = blocks / stages, extra = blocks % stages;
  int first = 0;
  for (int s = 0; s < stages; s++) {
    split[s].first = first;
    split[s].count = base + (s < extra ? 1 : 0);
    first += split[s].count;
  }
  return split;
}

PipelineSplit stage_split(int blocks, int stages, int stage) {
  const StageBlocks b = split_blocks(blocks, stages).at(static_cast<size_t>(stage));
  return PipelineSplit{stages, stage, b.first, b.count};
}

}  // namespace zt
