// Stage 3's partitioning, as DeepSpeed's partition_parameters.py does it: every
// tensor is split on its own into W pieces of ceil(numel / W) elements (padded
// to a multiple of W, not of W * 64); a rank's shard holds its piece of every
// tensor, parameter group by group in group order (DeepSpeed's fp32
// partitions per sub-group). Tensors of at most stage3_param_persistence_
// threshold elements (walking the model in order, while their total stays
// within stage3_model_persistence_threshold) are persistent: once gathered they
// are never released by the module hooks, and after each step each is
// all-gathered anew with its own call. Sub-groups (sub_group_size partitioned
// elements) each take one float64 gradient-norm all-reduce.
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_table.h"
#include "zero/layout/param_groups.h"
#include "zero/optim/shard_optimizer.h"
#include "zero/schedule/schedule.h"
#include "zero/zero_config.h"

namespace zt {

class Stage3Layout {
 public:
  Stage3Layout(const ParamTable& table, const std::vector<ParamGroup>& groups, int world,
               const ZeroConfig& z);
  int world() const { return world_; }
  // hpZ: the ranks of a secondary-partition group (zero_hpz_partition_size,
  // at most W; 1: no secondary partition).
  int hpz() const { return hpz_; }
  RankGroup hpz_group() const { return {hpz_, 1}; }
  // hpZ's piece of tensor p per group rank: DeepSpeed's aligned size (W
  // pieces) over the group, piece(p) * W / hpz.
  size_t secondary_piece(int p) const { return piece_[p] * (world_ / hpz_); }
  // Elements of every tensor's secondary piece: what hpZ adds per rank at
  // most (at the step, which releases every tensor before dropping them).
  uint64_t secondary_elems() const { return secondary_elems_; }
  size_t shard_size() const { return shard_size_; }
  // ceil(numel / W): every rank's piece of tensor p (the last ones padded).
  size_t piece(int p) const { return piece_[p]; }
  size_t shard_offset(int p) const { return shard_offset_[p]; }
  bool persistent(int p) const { return persistent_[p]; }
  uint64_t persistent_elems() const { return persistent_elems_; }
  const std::vector<int>& persistent_params() const { return persistent_order_; }
  // Norm groups: each a list of tensors (DeepSpeed's sub-groups).
  const std::vector<std::vector<int>>& sub_groups() const { return sub_groups_; }
  // The step's norm all-reduces: one float64 per sub-group.
  std::vector<StepCall> norm_calls() const;
  std::vector<OptimPiece> pieces(const ParamTable& table, int rank) const;
  // DeepSpeed's stage-3 gradient buckets over the arrival order; with qgZ on
  // several nodes of ranks_per_node ranks, each tensor of a bucket is reduced
  // on its own (quantized where it applies, else reduce-scattered).
  BucketSchedule grad_buckets(const ParamTable& table, const std::vector<int>& order,
                              const ZeroConfig& z, int ranks_per_node) const;
  // Whether qgZ replaces the reduce-scatter on this placement (DeepSpeed: more than one node).
  bool quantized_gradients(const ZeroConfig& z, int ranks_per_node) const;

 private:
  int world_;
  int hpz_ = 1;
  uint64_t secondary_elems_ = 0;
  size_t shard_size_ = 0;
  std::vector<size_t> piece_, shard_offset_;
  std::vector<bool> persistent_;
  std::vector<int> group_of_;
  std::vector<bool> group_decay_;
  std::vector<int> persistent_order_;
  uint64_t persistent_elems_ = 0;
  std::vector<std::vector<int>> sub_groups_;
  std::vector<int> sub_group_of_;
};

}  // namespace zt
