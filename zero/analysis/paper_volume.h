// The ZeRO paper's communication volume per rank per optimizer step
// (ZERO_SEMANTICS.md) beside what a schedule moves, and the smallest change of
// DeepSpeed's switches whose schedule moves no more than the paper says. Every
// candidate is planned with plan_step, so an answer is what would run.
//
// The paper counts Ψ elements per reduce-scatter or all-gather and 2Ψ per
// all-reduce (its large-W limit), all in the model's dtype; rings move
// (W-1)/W of that, the ring optimum. With A micro-steps per step:
//   stage 0: 2Ψ           (one gradient all-reduce at the accumulation boundary)
//   stage 1: Ψ + Ψ        (gradients reduced at the boundary, parameters gathered)
//   stage 2: A·Ψ + Ψ      (gradients are partitioned, so every backward reduces them)
//   stage 3: A·(Ψ + Ψ + Ψ) (forward gather, backward gather, gradient reduce-scatter)
// What a schedule moves: the bus bytes of its gradient and parameter calls in a
// steady step (scalars, such as the norms, are left out).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zero/analysis/plan.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {

struct PaperVolume {
  double grads_bytes = 0, params_bytes = 0;
  std::string formula;  // e.g. "A·Ψ + Ψ = 3 x 842496 + 842496 elements of fp32"
  double total() const { return grads_bytes + params_bytes; }
};
PaperVolume paper_volume(int stage, uint64_t psi, int micro_steps, DType model);

// Gradient plus parameter bus bytes of a plan's steady step.
double moved_bytes(const StepPlan& plan);

// DeepSpeed's switches that decide the configured stage's gradient volume, each
// flipped from its current value: reduce_scatter, use_multi_rank_bucket_allreduce,
// contiguous_gradients and round_robin_gradients (stages 1/2; stage 3 reads the
// first and third), and communication_data_type back to the model dtype when
// it differs. Stage 0 has none.
std::vector<SwitchChange> switches_deciding_volume(const ZeroConfig& z, DType model);

struct PlannedChange {
  std::vector<SwitchChange> changes;
  StepPlan plan;
  double moved = 0;
  std::string text() const;  // "a: x, b: y"; "(none)" when empty
};
// Every subset of `switches` of at most `max_size` changes, planned, smallest first.
std::vector<PlannedChange> plan_changes(const ZeroSetup& s, const ParamTable& table, int world,
                                        int micro_steps, DType model, const NodeMap& nodes,
                                        const std::vector<SwitchChange>& switches, int max_size);
// The fewest changes whose volume is at most `limit` bytes (ties: the least
// volume, then the fewest calls); null when none.
const PlannedChange* smallest_reaching(const std::vector<PlannedChange>& planned, double limit);

}  // namespace zt
