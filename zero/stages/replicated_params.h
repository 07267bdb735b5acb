// What stages 0, 1 and 2 share: every rank holds the full model-dtype
// parameters in one flat buffer laid out by the FlatLayout; a module's fetch
// returns pointers into it. After the optimizer updates a rank's shard, the
// shards are all-gathered back as the schedule lists: one call per partition
// group in place (current DeepSpeed), or chunks of every rank's slice through
// a staging buffer (older DeepSpeed, allgather_bucketed).
#pragma once
#include <cstdint>
#include <vector>

#include "zero/layout/flat_layout.h"
#include "zero/schedule/stage012_schedule.h"

namespace zt {

class ReplicatedParams {
 public:
  ReplicatedParams(const ParamTable& table, const FlatLayout& layout, Ops& ops, Communicator& comm);
  ~ReplicatedParams();
  ReplicatedParams(const ReplicatedParams&) = delete;
  ReplicatedParams& operator=(const ReplicatedParams&) = delete;

  void* data() { return params_; }
  const void* const* module(int m) const { return module_ptrs_[m].data(); }
  // One of the schedule's parameter all-gathers (StepCall::ParamGather).
  void all_gather(const StepCall& call);
  // Writes round(master) of this rank's pieces, then runs the schedule's gathers.
  void refresh_from(ShardOptimizer& optimizer, const std::vector<StepCall>& step);

 private:
  const FlatLayout& layout_;
  Ops& ops_;
  Communicator& comm_;
  void* params_;
  std::vector<std::vector<const void*>> module_ptrs_;
};

// The sum over ranks of one scalar, as one all-reduce of one element in `dtype`.
double all_reduce_scalar(double x, DType dtype, Ops& ops, Communicator& comm);
// DeepSpeed's overflow check: whether any rank's gradient sums of squares
// hold an inf or NaN, as one all-reduce (maximum) of one uint8 flag.
bool any_rank_overflowed(const std::vector<double>& sums, Ops& ops, Communicator& comm);
// min(1, clip / (norm + 1e-6)); 1 when clip is 0.
float clip_scale(double norm, double clip);

}  // namespace zt
