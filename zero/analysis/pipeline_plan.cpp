#include "zero/analysis/pipeline_plan.h"

#include "zero/stages/model_parallel_norm.h"

namespace zt {

std::vector<PlannedCall> plan_pipeline_calls(const std::vector<PipeAction>& actions, int stage,
                                             int stages, int micro_batches, size_t boundary,
                                             size_t tied_embedding, DType model,
                                             bool overflow_check) {
  std::vector<PlannedCall> calls;
  auto message = [&](Phase phase, int micro, Purpose purpose, Primitive p, size_t count, int peer,
                     const std::string& what) {
    PlannedCall c{phase, micro, purpose, p, model, count, peer, what};
    c.group = RankGroup{stages, 1};
    calls.push_back(c);
  };
  for (const PipeAction& a : actions) {
    if (a.op == PipeOp::Forward || a.op == PipeOp::Backward) continue;
    const bool forward = a.op == PipeOp::RecvActivation || a.op == PipeOp::SendActivation;
    const bool sends = a.op == PipeOp::SendActivation || a.op == PipeOp::SendGradient;
    message(forward ? Phase::Forward : Phase::Backward, a.micro_batch, Purpose::Activations,
            sends ? Primitive::Send : Primitive::Recv, boundary, peer_stage(a.op, stage),
            describe(a));
  }
  if (stages > 1 && (stage == 0 || stage == stages - 1)) {
    const int peer = stage == 0 ? stages - 1 : 0, last_micro = micro_batches - 1;
    const char* what = "tied wte gradient";
    if (stage == 0) {
      message(Phase::Backward, last_micro, Purpose::Gradients, Primitive::Send, tied_embedding,
              peer, what);
      message(Phase::Backward, last_micro, Purpose::Gradients, Primitive::Recv, tied_embedding,
              peer, what);
    } else {
      message(Phase::Backward, last_micro, Purpose::Gradients, Primitive::Recv, tied_embedding,
              peer, what);
      message(Phase::Backward, last_micro, Purpose::Gradients, Primitive::Send, tied_embedding,
              peer, what);
    }
  }
  if (stages > 1)
    for (const StepCall& s : model_parallel_step_calls(overflow_check)) {
      PlannedCall c{
          Phase::Step, micro_batches - 1,    Purpose::Scalars, s.primitive, s.dtype, s.count,
          -1,          "pipeline: " + s.what};
      c.group = RankGroup{stages, 1};
      calls.push_back(c);
    }
  return calls;
}

}  // namespace zt
