#include "train/commands/plan_predictions.h"

#include <cstdio>
#include <stdexcept>

#include "train/report/report_prediction.h"

namespace zt {

void print_predictions(const std::vector<PredictedRow>& rows, const NetworkModel& net,
                       const ComputeTimes& compute, int A, const std::string& configured) {
  std::printf(
      "\nstep-time model (a prediction, not a measurement; docs/step_time_model.md):\n"
      "  network: %s\n  compute: %s: %.3f ms per micro-step (forward 1/3, backward 2/3), "
      "optimizer %.3f ms over the whole model\n"
      "  comm = every call's predicted time added up; exposed = what the compute does not hide; "
      "step = compute + exposed; speed-up = the DeepSpeed-default path's step of the same stage "
      "/ this step\n\n",
      net.source.c_str(), compute.source.c_str(), compute.micro_step_s * 1e3,
      compute.optimizer_s * 1e3);
  std::printf("  %-30s %12s %12s %12s %12s %12s %10s\n", "configuration", "compute ms",
              "optimizer ms", "comm ms", "exposed ms", "step ms", "speed-up");
  for (const PredictedRow& r : rows) {
    if (!r.why_not.empty()) {
      std::printf("%s %-30s no prediction: %s\n", r.label == configured ? "*" : " ",
                  r.label.c_str(), r.why_not.c_str());
      continue;
    }
    double base = 0;
    for (const PredictedRow& b : rows)
      if (b.plan.stage == r.plan.stage && b.why_not.empty() && b.deepspeed_default)
        base = b.t.step_s;
    std::printf("%s %-30s %12.2f %12.2f %12.2f %12.2f %12.2f %9.2fx\n",
                r.label == configured ? "*" : " ", r.label.c_str(), r.t.compute_s * 1e3,
                r.t.optimizer_s * 1e3, r.t.comm_s * 1e3, r.t.exposed_s * 1e3, r.t.step_s * 1e3,
                base > 0 ? base / r.t.step_s : 0.0);
  }
  std::printf("  (%d micro-steps per step)\n", A);
}

// A grid's step by the grid step-time model (zero/analysis/grid_step_time.h),
// as report predicts grid runs (predict_grid_run), at every ZeRO stage over
// the grid's data-parallel groups; the configured stage is starred.
void print_grid_predictions(const Config& cfg, const Grid& grid, int world, int per_node, int A,
                            const NetworkModel& net, const ComputeTimes& times,
                            const NetworkModel* tensor, const NetworkModel* data) {
  std::printf(
      "\ngrid step-time model (a prediction, not a measurement; zero/analysis/grid_step_time.h, "
      "docs/grid_projection.md):\n  network: %s\n  compute: %s: %.3f ms per whole-model "
      "micro-step, optimizer %.3f ms over the whole model; a shard or stage takes its FLOP share\n"
      "  gradients reduced by the primitive of each stage's gradient path as the config selects "
      "it; step = compute + bubble + tensor + pipeline + data exposed\n\n",
      net.source.c_str(), times.source.c_str(), times.micro_step_s * 1e3, times.optimizer_s * 1e3);
  if (grid.tensor > 1)
    std::printf("  tensor calls: %s\n\n",
                tensor ? tensor->source.c_str() : "by the link rule (no --tensor-curves)");
  if (grid.data > 1)
    std::printf("  data-parallel calls: %s\n\n",
                data ? data->source.c_str() : "by the link rule (no --data-curves)");
  std::printf("  %-10s %10s %10s %10s %10s %10s %14s\n", "ZeRO stage", "step ms", "compute",
              "bubble", "tensor", "pipeline", "data exposed");
  ComputeChoice compute;
  compute.times = times;
  compute.label = times.source;
  for (int stage = 0; stage <= 3; stage++) {
    Config c = cfg;
    c.zero.stage = stage;
    GridStepPrediction t;
    std::string why;
    const char* mark = stage == cfg.zero.stage ? "*" : " ";
    GridGroupCurves curves;
    if (tensor) curves.tensor = tensor->curves;
    if (data) curves.data = data->curves;
    bool predicted = false;
    try {
      predicted = predict_grid_run(c, world, per_node, A, net, compute, curves, &t, &why);
    } catch (const std::invalid_argument& e) {
      why = e.what();  // a curve the stage's calls need was not measured
    }
    if (!predicted) {
      std::printf("%s %-10d no prediction: %s\n", mark, stage, why.c_str());
      continue;
    }
    std::printf("%s %-10d %10.2f %10.2f %10.2f %10.2f %10.2f %14.2f%s\n", mark, stage,
                t.step_s * 1e3, t.compute_s * 1e3, t.bubble_s * 1e3, t.tensor_s * 1e3,
                t.pipeline_s * 1e3, t.data_exposed_s * 1e3,
                t.deepspeed_refuses ? "  (DeepSpeed's pipeline engine refuses it)" : "");
  }
  std::printf("  (%d micro-steps per step, %d x %d x %d)\n", A, grid.data, grid.tensor,
              grid.pipeline);
}

}  // namespace zt
