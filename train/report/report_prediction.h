// The step-time model beside each run of `zerotrain report`: the run's own
// config (RUN/config.yaml) planned at its world size and node layout, a
// compute from one reference per system (choose_compute), and a network: the one given with
// --network, else the emulated cluster the run recorded (summary.json's
// "cluster"). Runs with neither get no prediction.
#pragma once
#include <string>
#include <vector>

#include "train/config/config.h"
#include "train/report/report_table.h"
#include "zero/analysis/grid_step_time.h"
#include "zero/analysis/step_time_model.h"

namespace zt {

// The compute a row's prediction uses, so that only the reference is measured:
// (a) `compute_from` (report --compute-from SUMMARY.json) when given; else
// (b) the run's stated emulated compute (summary.json "compute_mode":
//     "emulated" with "emulated_compute": micro_step_ms and optimizer_ms, the
//     optimizer over the whole model as plan's --compute-ms takes it); else
// (c) the reference run of the set: a stage-0 run with the same device, model
//     and micro-batch (the same world first), "compute from run NAME"; else
// (d) the row's own measured compute, labelled "own compute (not a prediction
//     of compute)". `label` names the choice for report.md and report.csv.
// (b) alone: true, with the durations, when the summary says its compute was
// emulated; false for a real run. Throws ConfigError on a malformed block.
bool stated_emulated_compute(const std::string& summary_path, ComputeTimes* out,
                             std::string* label);

struct ComputeChoice {
  ComputeTimes times;
  std::string label;
};
ComputeChoice choose_compute(const RunsDir& runs, const ReportRow& row, const std::string& runs_dir,
                             const std::string& compute_from);

// A grid run (parallel.tensor or parallel.pipeline > 1) is predicted by the
// grid step-time model (zero/analysis/grid_step_time.h) on the network's
// link figures, its rates set so that the whole model's micro-step and
// optimizer take the compute's times: FLOP/s = the whole model's FLOPs of a
// micro-step over its time (so a stage's or shard's compute is its FLOP
// share), bytes/s = 32 bytes per parameter over the optimizer's time. The
// model places the tensor group innermost and reduces the gradients with
// the primitive of the run's gradient path (select_grad_path); a network of curves, another rank
// order or a compute that is the row's own (a stage's) gets no prediction: false, with the reason
// in `why`. `curves` (either may be empty): the tensor groups' calls measured over every group at
// once (commbench --group-size T) and the data-parallel groups' (--group-size D --group-stride T),
// each in place of the link rule.
struct GridGroupCurves {
  std::vector<CallCurve> tensor, data;
};
bool predict_grid_run(const Config& cfg, int world, int ranks_per_node, int accum,
                      const NetworkModel& net, const ComputeChoice& compute,
                      const GridGroupCurves& curves, GridStepPrediction* out, std::string* why);

// Fills predicted_step_ms and, over the same baseline as the speed-up
// (tokens/s), the speed-ups (median step) measured and predicted. A grid row
// of T > 1 takes its tensor calls from the one of `tensor_curves` (commbench
// files, report --tensor-curves) measured at its world, ranks per node and
// group size T, and a grid row of D > 1 its data-parallel calls from the one
// of `data_curves` (report --data-curves) measured over groups of D ranks T
// apart; without one, from the link rule, and its label says which.
// Throws std::runtime_error naming the run's file.
void predict_rows(RunsDir& runs, const std::string& runs_dir, const NetworkModel* network,
                  const std::string& compute_from = "",
                  const std::vector<NetworkModel>& tensor_curves = {},
                  const std::vector<NetworkModel>& data_curves = {});

}  // namespace zt
