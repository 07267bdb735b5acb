// `zerotrain report`'s table: one row per RUNS_DIR/*/summary.json, with the
// configuration columns, throughput, the gradient bytes per primitive (the
// gradient-norm all-reduce taken out) and the speed-up over the DeepSpeed
// default path of the same stage and settings. The rendering to CSV and to a
// Markdown table lives here too, so that tests can check what users read.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace zt {

// Per rank per optimizer step, nccl-tests' convention (zero/comm/comm_stats.h).
struct PrimitiveBytes {
  double payload = 0;
  double bus = 0;
  double inter = 0;  // the part of bus sent to another node
};

struct ReportRow {
  std::string run;        // directory name under RUNS_DIR
  std::string device;     // with " (compute emulated)" for an emulated run
  bool emulated = false;  // system.compute: emulate: the compute was waited for
  int stage = 0;
  std::string grad_path;
  bool reduce_scatter = true;  // config zero.reduce_scatter: stage 3's path
  // The registry's DeepSpeed-default path, selected by the run's own switches,
  // without offload or ZeRO++ (grad_path_registry.h).
  bool deepspeed_default = false;
  std::string zeropp;   // stage 3's ZeRO++ features, e.g. "hpZ 2 + qwZ" ("" none)
  std::string offload;  // e.g. "optimizer nvme + params cpu" ("" none)
  int64_t reduce_bucket_size = 0;
  bool overlap_comm = false;
  int micro_batch = 0, accum_steps = 0, world = 0;
  int64_t params = 0;
  int n_layer = 0, n_embd = 0, seq_len = 0;

  double tokens_per_second = 0;
  double tflops_per_gpu = 0;  // (6N + 6LCT) flops per token, see flops_per_token
  double step_ms = 0;         // median
  double exposed_comm_ms_per_step = 0;
  PrimitiveBytes grad_all_reduce, grad_reduce, grad_reduce_scatter, grad_all_to_all,
      param_all_gather;
  double model_states_bytes = 0, peak_total_bytes = 0;
  // The grid's dimensions' bus bytes per step, all primitives and purposes,
  // and their inter-node part (indexed by zero/comm's Dimension; 0 where a
  // summary predates the split).
  double dimension_bus[3] = {0, 0, 0}, dimension_inter_node[3] = {0, 0, 0};

  // Two speed-ups over the same baseline, kept apart because they answer two
  // questions: tokens_per_second covers every step after the first, so a
  // stalled step lowers it (what a user gets from the run); the median step
  // ignores stalls and is what the step-time model predicts (one typical step).
  // Labels say which: "speed-up (tokens/s)" and "speed-up (median step)".
  bool has_baseline = false;  // a DeepSpeed-default run with the same settings exists
  double speedup = 0;         // speed-up (tokens/s): tokens_per_second over the baseline's
  std::string baseline_run;

  // The step-time model's (train/report/report_prediction.h), when a network is known.
  bool has_prediction = false;
  double predicted_step_ms = 0, predicted_exposed_ms = 0;
  // Speed-ups (median step): the baseline's step over this one's; 0: none.
  double predicted_speedup = 0;  // predicted steps
  double step_speedup = 0;       // measured median steps
  std::string network;           // where the network figures came from
  std::string compute_source;    // where the prediction's compute came from
};

struct RunsDir {
  std::vector<ReportRow> rows;               // sorted: stage, path, settings, name
  std::vector<std::string> without_summary;  // subdirectories with no summary.json
};

// Training FLOPs per token: 6N for the matmuls (forward 2N, backward 4N) plus
// 6·L·C·T for attention scores and weighted values under the causal mask
// (half of the full 12·L·C·T, as only the lower triangle is needed).
double flops_per_token(int64_t params, int n_layer, int n_embd, int seq_len);

// One summary.json; throws std::runtime_error "FILE: unreadable summary: WHY".
ReportRow read_summary(const std::string& path, const std::string& run_name);

// Every RUNS_DIR/*/summary.json, sorted, speed-ups filled in. Throws
// std::runtime_error (one line) when RUNS_DIR is not a directory, holds no
// summary, or one summary cannot be read.
RunsDir load_runs_dir(const std::string& runs_dir);

// The speed-up (tokens/s) column: each row against the DeepSpeed-default run
// of the same stage, bucket, overlap, micro-batch, accumulation, world, model
// and device (ReportRow::deepspeed_default). The first such run in row order
// is the baseline.
void fill_speedups(std::vector<ReportRow>& rows);

// Columns appended to report.csv: a header of comma-separated names, and
// for each row its fields, already CSV-quoted and comma-separated.
struct CsvColumns {
  std::string header;
  std::vector<std::string> fields;  // one per row, in the rows' order
};
std::string report_csv(const std::vector<ReportRow>& rows, const CsvColumns* extra = nullptr);
// The gradient path, with stage 3's ZeRO++ features and the offload.
std::string path_label(const ReportRow& r);
std::string report_markdown_table(const std::vector<ReportRow>& rows);
// The caption under the Markdown table: units, formulas, what was excluded.
std::string report_caption();
// Measured against the step-time model, for the rows that have a prediction.
std::string report_prediction_table(const std::vector<ReportRow>& rows);

}  // namespace zt
