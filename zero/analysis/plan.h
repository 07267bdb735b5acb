// `zerotrain plan` and `explain`: every collective of one optimizer step, in
// issue order, and the per-rank model-state bytes of a configuration, computed
// from the same schedules the engines execute (stage012_schedule.h; stage 3's
// buckets and its gatherer run over the model's events with a recording
// backend), without training.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "zero/analysis/memory_formula.h"
#include "zero/comm/comm_stats.h"
#include "zero/optim/offload_optimizer.h"
#include "zero/schedule/deepspeed_startup.h"
#include "zero/schedule/grad_path_registry.h"
#include "zero/schedule/schedule.h"
#include "zero/stages/engine.h"

namespace zt {

struct PlannedCall {
  Phase phase;
  int micro;
  Purpose purpose;
  Primitive primitive;
  DType dtype;
  size_t count;  // per the Communicator's convention
  int root;      // -1 unless rooted
  std::string what;
  // Where in its micro-step's forward or backward the call sits, as the
  // fraction of that pass's compute done (model/compute_places.h, the rule
  // compute emulation sleeps by): gradients are issued once it is done,
  // parameters are needed before the compute beyond it. Step-phase calls: 0.
  double at = 0;
  RankGroup group{0, 1};  // the ranks it runs over; size 0: the world
  bool scales = false;    // a quantized call's fp32 scales (qwZ, qgZ)
};

struct PlannedPrimitive {
  uint64_t calls = 0, bytes = 0;  // payload bytes per rank, nccl-tests convention
  double bus_bytes = 0;
  double inter_node_bus_bytes = 0;  // per rank, averaged over the ranks (comm_stats.h's rule)
};
using PrimitiveTotals = std::array<PlannedPrimitive, static_cast<int>(Primitive::kCount)>;

struct StepPlan {
  int stage = 0;
  bool overlap_comm = false;     // collectives run beside the compute (otherwise it waits for each)
  bool double_buffered = false;  // the schedule's two bucket buffers alternate
  const GradPathRow* path = nullptr;  // the registry's row (grad_path_registry.h)
  // The buckets of one reducing pass, when they reduce and how they are cut
  // (the schedule's own words), and stages 1/2's flat buffer per parameter group.
  BucketSchedule grads;
  std::string when, bucket_rule;
  std::vector<size_t> group_buffer_elems;
  // What the release issues before the first step (deepspeed_startup.h).
  std::vector<StartupCall> startup;
  // A steady step, and stage 3's very first (it records its trace there);
  // stages 0-2's first step is a steady one, not stored twice (per_owner_reduce
  // plans a rooted reduce per rank and micro-step).
  std::vector<PlannedCall> first_step, steady_step;
  const std::vector<PlannedCall>& first_step_calls() const {
    return stage == 3 ? first_step : steady_step;
  }
  // The step opens with DeepSpeed's overflow check (the schedule's StepCall):
  // with a model split, its flag is synced over the model-parallel group too.
  bool overflow_check = false;
  PrimitiveTotals per_step{}, first{};
  std::array<PrimitiveTotals, static_cast<int>(Purpose::kCount)> per_step_by_purpose{};
  uint64_t padded_params = 0;
  // The ranks the optimizer state is sharded over at stages 1-3: W, or MiCS's
  // shard group (0: W, for plans built by hand).
  int state_ranks = 0;
  uint64_t params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;  // per rank, device memory
  // Per rank by where it lives (device as above, host memory, NVMe files), and
  // how an offloaded optimizer streams its state (zero/optim/offload_optimizer.h).
  ModelStatesPlacement placement;
  int dtype_bytes = 4;            // of the model dtype
  bool params_offloaded = false;  // stage 3 with offload_param: gathers read the host shard
  OptimizerOffloadPlan optimizer_offload;
  uint64_t gradient_bus_bytes = 0;  // the part of a steady step's bus bytes that moves gradients
  uint64_t persistent_bytes = 0;    // stage 3: parameters kept whole on every rank
  size_t persistent_tensors = 0;    // stage 3: how many tensors that is
  uint64_t live_params_peak_bytes = 0;  // stage 3: most parameter bytes gathered at once
  // hpZ: the secondary pieces once every tensor has one (the step's release of
  // all), on top of params_bytes until the step drops them.
  uint64_t hpz_secondary_bytes = 0;
  const PlannedPrimitive& operator[](Primitive p) const { return per_step[static_cast<int>(p)]; }
};

// One optimizer step of `micro_steps` micro-steps at world size W, placed on
// nodes as `nodes` says; `model` is the model dtype (fp32 on the CPU, bf16 on
// the GPU).
StepPlan plan_step(const ZeroSetup& s, const ParamTable& table, int world, int micro_steps,
                   DType model, const NodeMap& nodes);

// Per primitive, over the calls (of one purpose, when given).
PrimitiveTotals totals(const std::vector<PlannedCall>& calls, int world, const NodeMap& nodes,
                       const Purpose* only = nullptr);

}  // namespace zt
