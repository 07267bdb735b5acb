// What ZeRO++ adds to a stage-3 plan, printed by `plan` and `explain`: hpZ's
// secondary-partition memory, and for qwZ and qgZ the codes and scales per
// step against the same step unquantized, payload and inter-node bus bytes.
#pragma once
#include "zero/analysis/plan.h"
#include "zero/zero_config.h"

namespace zt {

void print_zeropp(const StepPlan& mine, const StepPlan& unquantized, const ZeroConfig& z, int world,
                  const NodeMap& nodes);

}  // namespace zt
