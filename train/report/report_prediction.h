// The step-time model beside each run of `zerotrain report`: the run's own
// config (RUN/config.yaml) planned at its world size and node layout, its
// measured compute (summary.json's timing), and a network: the one given with
// --network, else the emulated cluster the run recorded (summary.json's
// "cluster"). Runs with neither get no prediction.
#pragma once
#include <string>

#include "train/report/report_table.h"
#include "zero/analysis/step_time_model.h"

namespace zt {

// Fills predicted_step_ms and, over the same baseline as the speed-up
// (tokens/s), the speed-ups (median step) measured and predicted. Throws
// std::runtime_error naming the run's file.
void predict_rows(RunsDir& runs, const std::string& runs_dir, const NetworkModel* network);

}  // namespace zt
