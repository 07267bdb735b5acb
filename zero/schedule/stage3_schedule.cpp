#include "zero/schedule/stage3_schedule.h"

#include "zero/schedule/bucketing.h"

namespace zt {

Stage3Schedule::Stage3Schedule(const ZeroSetup& s, const ParamTable& table, int world, DType model)
    : path_row(&select_grad_path(s.z)), layout(table, s.groups, world, s.z),
      grads(layout.grad_buckets(table, grad_ready_order(s.events), s.z, s.ranks_per_node)),
      wire(gradient_wire_dtype(s.z, model)), overlap(s.z.overlap_comm),
      when("per backward (every micro-step)"),
      bucket_rule("backward (arrival) order; reduce_bucket_size " +
                  std::to_string(s.z.reduce_bucket_size) + ": " + kOverflowRule) {
  grads.buffers = zero_bucket_buffers(s.z.overlap_comm);
}

ParamStates released_param_states(size_t n) {
  ParamStates st;
  st.status.assign(n, ParamStatus::NotAvailable);
  st.active.assign(n, {});
  st.call.assign(n, -1);
  st.secondary.assign(n, false);
  return st;
}

void run_stage3_step(ParamGatherer& gatherer, const std::function<void()>& update) {
  gatherer.release_all();
  update();
  gatherer.gather_persistent();
}

}  // namespace zt
