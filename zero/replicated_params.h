// What stages 0, 1 and 2 share: every rank holds the full model-dtype
// parameters in one padded flat buffer; the model's parameter views point into
// it. After the optimizer updates a rank's shard, the shards are all-gathered
// back in place, in one call per partition group (current DeepSpeed) or chunked
// by allgather_bucket_size through a staging buffer (older DeepSpeed).
#pragma once
#include <cstdint>

#include "zero/engine.h"

namespace zt {

class ReplicatedParams {
 public:
  ReplicatedParams(const ParamTable& table, const Partition& partition, Ops& ops,
                   Communicator& comm, const ZeroConfig& z);
  ~ReplicatedParams();
  ReplicatedParams(const ReplicatedParams&) = delete;
  ReplicatedParams& operator=(const ReplicatedParams&) = delete;

  void* data() { return params_; }
  const void* unit(int u) const;
  // Brings every rank's owned slices to all ranks (in place).
  void all_gather_shards();
  // Writes round(master) of this rank's pieces, then gathers everyone's.
  void refresh_from(ShardOptimizer& optimizer);

 private:
  const ParamTable& table_;
  const Partition& partition_;
  Ops& ops_;
  Communicator& comm_;
  bool bucketed_;
  int64_t bucket_size_;
  void* params_;
};

// The global gradient norm: this rank's sum of squares plus one scalar
// all-reduce (skipped when every rank holds all gradients, as in stage 0).
double global_grad_norm(double local_sum_squares, bool all_reduce, Ops& ops, Communicator& comm);
// min(1, clip / (norm + 1e-6)); 1 when clip is 0.
float clip_scale(double norm, double clip);

}  // namespace zt
