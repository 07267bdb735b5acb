// What the engines of stages 0, 1 and 2 share: the schedule, the replicated
// parameters and their module views, the optimizer over this rank's pieces,
// the phase annotations, and the step (norms, clipping, AdamW, parameter
// all-gathers, as the schedule lists them). Each stage adds where its
// gradients live and when its buckets are reduced.
#pragma once
#include <memory>
#include <string>

#include "zero/schedule/stage012_schedule.h"
#include "zero/stages/bucket_reducer.h"
#include "zero/stages/replicated_params.h"

namespace zt {

class ReplicatedEngine : public ZeroEngine {
 public:
  ReplicatedEngine(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm);

  int stage() const override { return schedule_.stage; }
  std::string grad_path_key() const override { return schedule_.path_row->key; }
  void init_weights(const float* full_host) override;
  void refresh_params_from_master() override;
  size_t padded_params() const override { return schedule_.layout->padded_total(); }
  ShardOptimizer& optimizer() override { return optimizer_; }
  std::vector<int> state_replicas() const override;

  const void* const* fetch(int module, bool backward) override;
  void release(int, bool) override {}
  void begin_micro_step(int micro, int n_micro) override;
  double step(const OptimSettings& s, int t) override;

 protected:
  // The gradients the optimizer reads, and how they are addressed.
  virtual const void* step_grads() const = 0;
  virtual Indexing step_grads_indexing() const = 0;
  bool last_micro() const { return micro_ + 1 == n_micro_; }

  ZeroSetup setup_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  size_t es_;
  Stage012Schedule schedule_;
  ReplicatedParams params_;
  ShardOptimizer optimizer_;
  int micro_ = 0, n_micro_ = 1;
};

}  // namespace zt
