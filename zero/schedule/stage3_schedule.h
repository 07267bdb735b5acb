// Stage 3 as one schedule, built once from the setup, as Stage012Schedule is
// for stages 0-2: the layout (stage3_layout.h), the gradient path the registry
// selects, the buckets it fills over the backward's arrival order and their
// buffer count, the wire dtype, and the step's sequence. The engine
// (stage3.cpp) executes it; plan (plan.cpp) runs the same gatherer over the
// model's events with a recording backend; explain prints it. With MiCS
// (mics_groups.h) all of it runs over the shard group, and at the last
// micro-step each bucket's pieces are summed across the replica group.
#pragma once
#include <functional>
#include <string>

#include "zero/layout/mics_groups.h"
#include "zero/layout/stage3_layout.h"
#include "zero/schedule/grad_path_registry.h"
#include "zero/schedule/param_gatherer.h"
#include "zero/stages/engine.h"

namespace zt {

// MiCS_Optimizer.allreduce_mics_shard_grads: at the accumulation boundary,
// after bucket `bucket` is reduced in its shard group, one all-reduce of the
// rank's accumulated gradient pieces of its tensors (in parameter order, packed;
// model dtype) over the replica group.
struct ReplicaReduce {
  int bucket;
  std::vector<int> params;
  size_t count;  // elements: the pieces of `params`
};

struct Stage3Schedule {
  Stage3Schedule(const ZeroSetup& s, const ParamTable& table, int world, DType model);
  const GradPathRow* path_row;
  MicsGroups mics;
  Stage3Layout layout;  // over mics.shard's ranks
  // The gradients in the order DeepSpeed's hooks see them (stage3_hook_order.h).
  std::vector<int> hook_order;
  BucketSchedule grads;  // every backward, over hook_order, with its buffer count
  DType wire;
  // One per bucket, in bucket order, when replicated: issued right after the
  // bucket's reduction in the last micro-step's backward.
  std::vector<ReplicaReduce> replica_reduces;
  // The step's calls before the norms: the overflow check where the release
  // issues one (deepspeed_behaviours.h), else nothing.
  std::vector<StepCall> before_norms;
  bool overlap;                   // overlap_comm: buckets reduced beside the backward
  std::string when, bucket_rule;  // for explain
};

// Every parameter released, nothing in flight: how a stage-3 run starts.
ParamStates released_param_states(size_t params);
// Which parameters hold a secondary piece before the first step: every one
// under hpZ (zero.Init cuts them; Stage3Gathers::build_secondaries), none
// without.
std::vector<bool> started_secondaries(const Stage3Layout& layout, size_t params);

// The step's sequence, in stage3.py's order: every parameter released, the
// norms and the update (`update`), then the persistent tensors gathered anew.
void run_stage3_step(ParamGatherer& gatherer, const std::function<void()>& update);

}  // namespace zt
