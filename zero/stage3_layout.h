// Stage 3's layout and schedule (zero/stage3.cpp).
#pragma once
#include "zero/plan.h"

namespace zt {

StepPlan plan_stage3_step(const ZeroConfig& z, const ParamTable& table, int world, int micro_steps,
                          DType dtype);

}  // namespace zt
