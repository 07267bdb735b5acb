// Stage 3's layout and schedule. Every parameter tensor is partitioned evenly
// over the ranks (padded to W * kAlign), except tensors of at most
// stage3_param_persistence_threshold elements: those stay whole on every rank
// as well (their slices still carry the gradients and optimizer state, and they
// are re-gathered once after each step), as DeepSpeed does. A rank's shard holds
// its slices unit by unit, the partitioned tensors of each unit first (so one
// coalesced all-gather per unit reads one contiguous range), the persistent
// tensors of all units last (one all-gather after the step).
//
// Residency follows DeepSpeed's rules over the unit order traced in the first
// micro-step: after a use, a unit stays gathered if its next use comes within
// stage3_max_reuse_distance elements of other gathered units and no more than
// stage3_max_live_parameters elements are gathered; with overlap_comm, the units
// used next are prefetched up to stage3_prefetch_bucket_size elements ahead.
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_table.h"
#include "zero/partition.h"
#include "zero/plan.h"
#include "zero/shard_optimizer.h"
#include "zero/zero_config.h"

namespace zt {

struct Stage3Tensor {
  bool persistent = false;
  size_t slice = 0;              // elements per rank (padded numel / W)
  size_t shard_offset = 0;       // of every rank's slice in its shard
  size_t persistent_offset = 0;  // in the persistent store (persistent tensors only)
};

struct Stage3Bucket {
  std::vector<int> params;           // in backward (descending) order
  std::vector<size_t> slice_offset;  // each tensor's offset inside one rank's slice of the bucket
  size_t slice_total = 0;            // elements per rank
};

class Stage3Layout {
 public:
  Stage3Layout(const ParamTable& table, int world, const ZeroConfig& z);
  int world() const { return world_; }
  size_t padded_total() const { return padded_total_; }
  size_t shard_size() const { return padded_total_ / world_; }
  const std::vector<Stage3Tensor>& tensors() const { return tensors_; }
  // Shard range of unit u's partitioned slices (what one unit gather sends).
  FlatRange unit_gather_range(int u) const { return unit_gather_[u]; }
  // Elements a gather of unit u brings in (its partitioned tensors' numel).
  uint64_t unit_gathered_elems(int u) const { return unit_elems_[u]; }
  FlatRange persistent_range() const { return persistent_range_; }
  uint64_t persistent_elems() const { return persistent_elems_; }
  const std::vector<Stage3Bucket>& buckets() const { return buckets_; }
  int bucket_of(int param) const { return bucket_of_[param]; }
  std::vector<OptimPiece> pieces(const ParamTable& table, int rank) const;

 private:
  int world_;
  size_t padded_total_ = 0;
  std::vector<Stage3Tensor> tensors_;
  std::vector<FlatRange> unit_gather_;
  std::vector<uint64_t> unit_elems_;
  FlatRange persistent_range_;
  uint64_t persistent_elems_ = 0;
  std::vector<Stage3Bucket> buckets_;
  std::vector<int> bucket_of_;
};

// What happens at each position of a traced unit order within one micro-step.
struct Stage3Schedule {
  std::vector<bool> gather;                // a gather serves this position
  std::vector<bool> keep;                  // the unit stays gathered after this use
  std::vector<std::vector<int>> prefetch;  // positions whose gathers are issued here
  uint64_t live_peak_elems = 0;
};
Stage3Schedule stage3_schedule(const std::vector<int>& trace, const Stage3Layout& layout,
                               const ZeroConfig& z);

StepPlan plan_stage3_step(const ZeroConfig& z, const ParamTable& table, int world, int micro_steps,
                          DType dtype, const std::vector<int>& unit_trace);

}  // namespace zt
