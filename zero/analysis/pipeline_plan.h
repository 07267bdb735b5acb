// The pipeline's messages of one optimizer step on one stage, for `plan` and
// the tests that hold a run to it: each action of the stage's list
// (zero/grid/pipeline_schedule.h) that moves data, as PipelineStage issues it
// (train/loop/pipeline_step.h), then the tied embedding's gradient exchange
// between the first and the last stage; then, in the optimizer step, the
// gradient norm's sum over the pipeline group (zero/stages/model_parallel_norm.h,
// the overflow flag first where ZeRO's step checks one). Each message is one
// activation or gradient of the residual stream, `boundary` elements of the
// model dtype; the root field holds the peer stage.
#pragma once
#include <vector>

#include "zero/analysis/plan.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {

std::vector<PlannedCall> plan_pipeline_calls(const std::vector<PipeAction>& actions, int stage,
                                             int stages, int micro_batches, size_t boundary,
                                             size_t tied_embedding, DType model,
                                             bool overflow_check);

}  // namespace zt
