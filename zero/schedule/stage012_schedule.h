// Stages 0-2 as one schedule, built once from the setup: the layout, the
// gradient path and the buckets it fills over the arrival order, and the
// collectives of the optimizer step. Engines execute it; `plan` and `explain`
// print it, so what they print is what runs.
//
//   stage 0 (DeepSpeed's engine, no ZeRO optimizer): at the accumulation
//     boundary, the gradients in model order are all-reduced in buckets that
//     close once they pass 5e8 elements (MEMORY_OPT_ALLREDUCE_SIZE; DeepSpeed
//     ignores reduce_bucket_size here), one at a time on the compute stream;
//     a norm all-reduce only when clipping.
//   stage 1: the gradient path at the boundary, walking the parameter groups in
//     order (with overlap_comm, in the last backward as gradients arrive).
//   stage 2: the gradient path in every backward, as gradients arrive.
//   stages 1/2 step: one norm all-reduce per parameter group, then each
//     partition group all-gathered (or, allgather_bucketed, chunked as older
//     DeepSpeed: max(1, P*W // allgather_bucket_size) calls per group).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "zero/layout/flat_layout.h"
#include "zero/schedule/grad_path.h"
#include "zero/stages/engine.h"

namespace zt {

struct Stage012Schedule {
  int stage = 0;
  const GradPathRow* path_row = nullptr;  // the registry's row (grad_path_registry.h)
  std::unique_ptr<FlatLayout> layout;
  std::unique_ptr<GradPath> path;  // stages 1/2
  BucketSchedule grads;            // with its buffer count
  DType wire = DType::F32;
  bool every_micro_step = false;  // stage 2
  bool during_backward = false;   // buckets follow the backward (stage 2; stage 1 with overlap)
  // Collectives run beside the compute (overlap_comm; stage 0's engine reduces
  // on the compute stream whatever it says).
  bool overlap = false;
  std::string when, bucket_rule;  // for explain: when the buckets reduce, how they are cut
  std::vector<StepCall> step;
};

Stage012Schedule make_stage012_schedule(const ZeroSetup& s, const ParamTable& table, int world,
                                        DType model);

// The chunked all-gather of older DeepSpeed for one group of `partition`
// elements per rank: the elements each call gathers per rank.
std::vector<size_t> legacy_allgather_chunks(size_t partition, int world, int64_t bucket_size);

}  // namespace zt
