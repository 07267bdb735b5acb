#include "zero/stages/replicated_engine.h"

#include <cmath>
#include <limits>

namespace zt {

ReplicatedEngine::ReplicatedEngine(const ZeroSetup& s, const ParamTable& table, Ops& ops,
                                   Communicator& comm)
    : setup_(s), table_(table), ops_(ops), comm_(comm), es_(dtype_size(ops.dtype())),
      schedule_(make_stage012_schedule(s, table, comm.world(), ops.dtype())),
      params_(table, *schedule_.layout, ops, comm),
      optimizer_(schedule_.layout->pieces(table, s.z.stage == 0 ? 0 : comm.rank()),
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
  // Stage 0 holds the whole reduced gradient: its norm is local (and, with
  // clipping, DeepSpeed's clip_grad_norm_ still averages it over the ranks).
  double local = 0;
  for (double x : sums) local += x;
  double norm = std::sqrt(local), group_total = 0;
  bool per_group = false;
  for (const StepCall& c : schedule_.step) {
    // DeepSpeed skips the step when any rank overflowed (no norm, no update).
    if (c.kind == StepCall::OverflowCheck && any_rank_overflowed(sums, ops_, comm_))
      return std::numeric_limits<double>::quiet_NaN();
    if (c.kind != StepCall::Norm) continue;
    if (c.group < 0) {
      norm = all_reduce_scalar(norm / comm_.world(), c.dtype, ops_, comm_);
    } else {
      group_total += all_reduce_scalar(sums[c.group], c.dtype, ops_, comm_);
      per_group = true;
    }
  }
  if (per_group) norm = std::sqrt(group_total);
  optimizer_.step(step_grads(), step_grads_indexing(), params_.data(), Indexing::Flat, s,
                  clip_scale(norm, setup_.grad_clip), t);
  for (const StepCall& c : schedule_.step)
    if (c.kind == StepCall::ParamGather) params_.all_gather(c);
  return norm;
}

}  // namespace zt
