// plan --recovery: the recovery model (zero/analysis/recovery_model.h) on the
// configured step: which node losses its replicas survive, the snapshot's
// size and cost, and, with a network file, a node failure's predicted cost
// from memory against the disk checkpoints. Model output, labelled so.
#pragma once
#include <optional>

#include "train/config/config.h"
#include "zero/analysis/plan.h"
#include "zero/analysis/step_time_model.h"

namespace zt {

struct RecoveryReportInputs {
  const Config* cfg = nullptr;
  const StepPlan* plan = nullptr;  // the configured step
  int world = 1, ranks_per_node = 1, micro_steps = 1;
  const NetworkModel* net = nullptr;       // null: no timing
  std::optional<StepTimePrediction> step;  // the configured step's, with a network
  double compute_micro_step_s = 0;
  double relaunch_s = -1;  // < 0: not given
};

void print_recovery_report(const RecoveryReportInputs& in);

}  // namespace zt
