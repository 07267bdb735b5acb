// Where stages 0-2 keep each tensor: one flat buffer per optimizer parameter
// group, back to back in one allocation, and which rank owns which part.
//
//   deepspeed (stages 1/2): as stage_1_and_2.py builds bit16_groups_flat: the
//     group's tensors in order (round_robin_gradients: tensor i of the group
//     goes to the i % W-th run, runs concatenated), padded at the end to a
//     multiple of 2W (nccl_start_alignment_factor 2 x W), so all the padding
//     lies in the last rank's partition; W equal partitions per group.
//   aligned (zerotrain's native_reduce_scatter): each group buffer padded to
//     W x kAlign and cut from its top into chunks of at most reduce_bucket_size
//     (multiples of W x kAlign); every chunk is a partition group, so each
//     gradient bucket reduce-scatters into W equal slices.
//   replicated (stage 0): the model's own flat layout, one owner of everything.
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_table.h"
#include "zero/layout/param_groups.h"
#include "zero/layout/partition.h"
#include "zero/optim/shard_optimizer.h"

namespace zt {

class FlatLayout {
 public:
  static FlatLayout deepspeed(const ParamTable& table, const std::vector<ParamGroup>& groups,
                              int world, bool round_robin);
  static FlatLayout aligned(const ParamTable& table, const std::vector<ParamGroup>& groups,
                            int world, int64_t chunk);
  static FlatLayout replicated(const ParamTable& table, const std::vector<ParamGroup>& groups);

  const Partition& partition() const { return partition_; }
  size_t padded_total() const { return partition_.padded_total(); }
  // The tensor's first element in the layout.
  size_t offset(int param) const { return offset_[param]; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Each parameter group's range in the layout, padding included.
  const std::vector<FlatRange>& group_ranges() const { return group_ranges_; }
  // The tensors' pieces rank r owns, cut at tensor boundaries.
  std::vector<OptimPiece> pieces(const ParamTable& table, int rank) const;

 private:
  FlatLayout(const ParamTable& table, const std::vector<ParamGroup>& groups, int world,
             bool round_robin, size_t group_quantum);
  std::vector<ParamGroup> groups_;
  std::vector<size_t> offset_;
  std::vector<FlatRange> group_ranges_;
  Partition partition_;
};

}  // namespace zt
