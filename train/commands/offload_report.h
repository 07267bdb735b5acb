// Where an offloaded configuration keeps its model states, printed by `plan`
// and `explain`: per device, per rank on the host, on NVMe and per host, and
// how the optimizer streams its shard (plan_step's placement: what a run's
// summary.json memory section measures).
#pragma once
#include "zero/analysis/plan.h"
#include "zero/zero_config.h"

namespace zt {

void print_offload_memory(const StepPlan& p, const ZeroConfig& z, int per_node);

}  // namespace zt
