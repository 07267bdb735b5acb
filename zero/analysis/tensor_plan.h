// The tensor group's calls of one optimizer step, for `plan`: each
// micro-step's combine points, as the model makes them (GPT::combine_points)
// and as TensorParallelHooks issues them (tensor_call), over `tokens` tokens
// of a micro-batch; then the step's gradient-norm calls over the group
// (zero/stages/model_parallel_norm.h), the overflow flag first where ZeRO's
// step checks one (StepPlan::overflow_check).
#pragma once
#include <vector>

#include "model/module_hooks.h"
#include "model/param_table.h"
#include "zero/analysis/plan.h"

namespace zt {

std::vector<PlannedCall> plan_tensor_calls(const std::vector<CombinePoint>& points,
                                           const ParamTable& shard, int micro_steps, size_t tokens,
                                           DType model, bool overflow_check);

}  // namespace zt
