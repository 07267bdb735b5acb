// What `plan --network` prints: the step-time model's prediction of every
// gradient-path variant (docs/step_time_model.md), or, for a tensor or
// pipeline grid, the grid step-time model's at every ZeRO stage
// (zero/analysis/grid_step_time.h, as `report` predicts grid runs).
#pragma once
#include <string>
#include <vector>

#include "train/config/config.h"
#include "zero/analysis/plan.h"
#include "zero/analysis/step_time_model.h"
#include "zero/grid/grid.h"

namespace zt {

// One variant of the configured step: its plan and its predicted time.
struct PredictedRow {
  std::string label;
  bool deepspeed_default;
  StepPlan plan;
  StepTimePrediction t;
  std::string why_not;  // the network cannot time this variant (a curve it lacks)
};

// The variants' table; `configured` (a label) is starred.
void print_predictions(const std::vector<PredictedRow>& rows, const NetworkModel& net,
                       const ComputeTimes& compute, int A, const std::string& configured);

// The grid's step at ZeRO stages 0-3; the configured stage is starred.
// `tensor` and `data` (nullptr: the link rule): commbench curves of the
// tensor groups and of the data-parallel groups.
void print_grid_predictions(const Config& cfg, const Grid& grid, int world, int per_node, int A,
                            const NetworkModel& net, const ComputeTimes& times,
                            const NetworkModel* tensor, const NetworkModel* data);

}  // namespace zt
