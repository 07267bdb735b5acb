#include "zero/stages/replicated_engine.h"

#include <cmath>
#include <limits>
#include <optional>

namespace zt {

ReplicatedEngine::ReplicatedEngine(const ZeroSetup& s, const ParamTable& table, Ops& ops,
                                   Communicator& comm)
    : setup_(s), table_(table), ops_(ops), comm_(comm), es_(dtype_size(ops.dtype())),
      schedule_(make_stage012_schedule(s, table, comm.world(), ops.dtype())),
      params_(table, *schedule_.layout, ops, comm),
      optimizer_(mark_norm_pieces(schedule_.layout->pieces(table, s.z.stage == 0 ? 0 : comm.rank()),
                                  table, s.model_parallel),
                 s.z.stage == 0 ? schedule_.layout->padded_total()
                                : schedule_.layout->partition().shard_size(),
                 ops, s.z, comm.rank()) {}

// Stage 0 keeps the whole state on every rank; stages 1/2 partition it over all of them.
std::vector<int> ReplicatedEngine::state_replicas() const {
  if (schedule_.stage != 0) return {comm_.rank()};
  std::vector<int> all(comm_.world());
  for (int r = 0; r < comm_.world(); r++) all[r] = r;
  return all;
}

void ReplicatedEngine::init_weights(const float* full_host) {
  optimizer_.init_master(full_host);
  refresh_params_from_master();
}

void ReplicatedEngine::refresh_params_from_master() {
  params_.refresh_from(optimizer_, schedule_.step);
}

const void* const* ReplicatedEngine::fetch(int module, bool backward) {
  if (table_.modules()[module].is_root())
    comm_.annotate(backward ? Phase::Backward : Phase::Forward, micro_);
  return params_.module(module);
}

void ReplicatedEngine::begin_micro_step(int micro, int n_micro) {
  micro_ = micro;
  n_micro_ = n_micro;
}

double ReplicatedEngine::step(const OptimSettings& s, int t) {
  comm_.annotate(Phase::Step, micro_);
  const std::vector<double> sums = optimizer_.grad_sum_squares(
      step_grads(), step_grads_indexing(), static_cast<int>(setup_.groups.size()));
  const ModelParallelNorm& mp = setup_.model_parallel;
  // Stage 0 holds the whole reduced gradient: its sum of squares is local.
  // Stages 1/2 add up the shards' sums, one all-reduce per parameter group.
  bool per_group = false;
  for (const StepCall& c : schedule_.step) per_group |= c.kind == StepCall::Norm && c.group >= 0;
  double squares = 0;
  if (!per_group)
    for (double x : sums) squares += x;
  std::optional<double> averaged;
  for (const StepCall& c : schedule_.step) {
    // DeepSpeed skips the step when any rank overflowed (no norm, no update).
    if (c.kind == StepCall::OverflowCheck &&
        model_parallel_overflow(any_rank_overflowed(sums, ops_, comm_), mp, ops_))
      return std::numeric_limits<double>::quiet_NaN();
    if (c.kind != StepCall::Norm) continue;
    if (c.group >= 0) squares += all_reduce_scalar(sums[c.group], c.dtype, ops_, comm_);
    // Stage 0 with clipping: DeepSpeed's clip_grad_norm_ averages the model's
    // norm over the data-parallel ranks.
    else
      averaged = all_reduce_scalar(model_parallel_norm(squares, mp, ops_) / comm_.world(), c.dtype,
                                   ops_, comm_);
  }
  const double norm = averaged ? *averaged : model_parallel_norm(squares, mp, ops_);
  optimizer_.step(step_grads(), step_grads_indexing(), params_.data(), Indexing::Flat, s,
                  clip_scale(norm, setup_.grad_clip), t);
  for (const StepCall& c : schedule_.step)
    if (c.kind == StepCall::ParamGather) params_.all_gather(c);
  return norm;
}

}  // namespace zt
