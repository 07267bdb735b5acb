// Where a micro-step's compute lies among its events: the rule compute
// emulation sleeps by (model/emulated_gpt.h) and the step-time model places
// every call by (zero/analysis/plan.h, PlannedCall::at), so the two agree.
//
// A pass is the forward, or the backward from its root's fetch on (the
// recomputed forwards count in the backward). Each module takes the share of
// the pass's parameter elements it owns, spent right after its fetch (its
// parameters are there) and before anything it does next (its gradients
// become ready, its children run). A tied weight counts in every module that
// owns it: lm_head's share of the backward comes first, while wte's gradient
// is ready only after the embedding's, last.
#pragma once
#include <vector>

#include "model/module_hooks.h"
#include "model/param_table.h"

namespace zt {

struct ComputePlaces {
  std::vector<double> share;        // per event: the compute right after it, a share of its pass
  std::vector<double> done_before;  // per event: the share of its pass done when it fires
  std::vector<bool> backward;       // per event: whether its pass is the backward
};

ComputePlaces compute_places(const ParamTable& table, const std::vector<ModuleEvent>& events);

}  // namespace zt
