#include "zero/schedule/stage3_schedule.h"

#include <algorithm>

#include "zero/schedule/bucketing.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/stage3_hook_order.h"

namespace zt {

Stage3Schedule::Stage3Schedule(const ZeroSetup& s, const ParamTable& table, int world, DType model)
    : path_row(&select_grad_path(s.z)), mics(mics_groups(s.z, world, s.ranks_per_node)),
      layout(table, s.groups, mics.shard.size, s.z),
      hook_order(stage3_hook_order(
          grad_ready_order(s.events), table,
          deepspeed_behaviours(s.z.deepspeed_version).stage3_linear_weight_grad_first)),
      grads(layout.grad_buckets(table, hook_order, s.z, s.ranks_per_node)),
      wire(gradient_wire_dtype(s.z, model)), overlap(s.z.overlap_comm),
      when("per backward (every micro-step)"),
      bucket_rule("backward (arrival) order; reduce_bucket_size " +
                  std::to_string(s.z.reduce_bucket_size) + ": " + kOverflowRule) {
  grads.buffers = zero_bucket_buffers(s.z.overlap_comm);
  const DeepSpeedBehaviours ds = deepspeed_behaviours(s.z.deepspeed_version);
  if (ds.overflow_check(model, s.z))
    before_norms.push_back(
        {StepCall::OverflowCheck, Primitive::AllReduce, 1, DType::U8, -1, 0,
         "overflow check (DeepSpeed " + ds.release.str() + ", " + dtype_name(model) + ")"});
  if (!mics.replicated()) return;
  // The buffers partition_grads returns, in the bucket's parameter order (the
  // reduce-scatter path sorts the bucket by ds_id). DeepSpeed leaves out a
  // piece that is padding only; zerotrain keeps it, so every rank moves alike.
  for (size_t b = 0; b < grads.buckets.size(); b++) {
    ReplicaReduce r{static_cast<int>(b), grads.buckets[b].params, 0};
    std::sort(r.params.begin(), r.params.end());
    for (int p : r.params) r.count += layout.piece(p);
    replica_reduces.push_back(std::move(r));
  }
}

ParamStates released_param_states(size_t n) {
  ParamStates st;
  st.status.assign(n, ParamStatus::NotAvailable);
  st.active.assign(n, {});
  st.call.assign(n, -1);
  st.secondary.assign(n, false);
  return st;
}

std::vector<bool> started_secondaries(const Stage3Layout& layout, size_t params) {
  return std::vector<bool>(params, layout.hpz() > 1);
}

void run_stage3_step(ParamGatherer& gatherer, const std::function<void()>& update) {
  gatherer.release_all();
  update();
  gatherer.gather_persistent();
}

}  // namespace zt
