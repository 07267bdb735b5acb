// report's choice of the compute a prediction uses (train/report/report_prediction.h):
// the stated emulated compute, else the stage-0 reference run, else the row's
// own, labelled as not a prediction of compute.
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/report/report_prediction.h"

namespace zt {
namespace {

using Catch::Matchers::WithinRel;

std::string summary(double micro_ms, const std::string& extra = "") {
  return "{\"world_size\": 4, \"timing\": {\"compute_ms_per_micro_step\": " +
         std::to_string(micro_ms) + ", \"optimizer_ms\": 2}" + extra + "}";
}

ReportRow row(const std::string& run, int stage, int micro_batch) {
  ReportRow r;
  r.run = run;
  r.stage = stage;
  r.micro_batch = micro_batch;
  r.device = "cpu";
  r.world = 4;
  return r;
}

}  // namespace

TEST_CASE("report's compute: emulated block, stage-0 reference, own labelled", "[report_compute]") {
  TestDir dir;
  write_file(dir.file("s0-mb4/summary.json"), summary(10));
  write_file(dir.file("s2-mb4/summary.json"), summary(30));
  write_file(dir.file("s2-mb8/summary.json"), summary(50));
  write_file(dir.file("s2-emu/summary.json"),
             summary(99, ", \"compute_mode\": \"emulated\", \"emulated_compute\": "
                         "{\"micro_step_ms\": 7, \"optimizer_ms\": 3, \"forward_fraction\": "
                         "0.3333, \"time_scale\": 1, \"source\": \"stated\"}"));
  RunsDir runs;
  runs.rows = {row("s0-mb4", 0, 4), row("s2-mb4", 2, 4), row("s2-mb8", 2, 8),
               row("s2-emu", 2, 4)};
  // The emulated block's stated durations, not the measured 99 ms.
  ComputeChoice c = choose_compute(runs, runs.rows[3], dir.path, "");
  CHECK_THAT(c.times.micro_step_s, WithinRel(7e-3, 1e-12));
  CHECK_THAT(c.times.optimizer_s, WithinRel(3e-3, 1e-12));
  require_parts(c.label, {"emulated compute", "7 ms", "3 ms", "stated"});
  // The stage-0 run of the same micro-batch: 10 ms, not the row's 30 ms.
  c = choose_compute(runs, runs.rows[1], dir.path, "");
  CHECK_THAT(c.times.micro_step_s, WithinRel(10e-3, 1e-12));
  CHECK(c.label == "compute from run s0-mb4");
  // No stage-0 run at micro-batch 8: the row's own, labelled.
  c = choose_compute(runs, runs.rows[2], dir.path, "");
  CHECK_THAT(c.times.micro_step_s, WithinRel(50e-3, 1e-12));
  require_parts(c.label, {"own compute (not a prediction of compute)", "micro-batch 8"});
  // The reference itself: its own compute, labelled.
  c = choose_compute(runs, runs.rows[0], dir.path, "");
  require_parts(c.label, {"own compute (not a prediction of compute)", "reference run"});
  // --compute-from wins over everything.
  c = choose_compute(runs, runs.rows[3], dir.path, dir.file("s2-mb8/summary.json"));
  CHECK_THAT(c.times.micro_step_s, WithinRel(50e-3, 1e-12));
  require_parts(c.label, {"--compute-from"});
}

}  // namespace zt
