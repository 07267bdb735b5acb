// What a run writes: the progress line per step, samples, RUN/metrics.jsonl
// (one JSON object per optimizer step) and RUN/summary.json. Only rank 0 writes.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/memory_ledger.h"
#include "zero/comm_stats.h"
#include "zero/zero_config.h"

namespace zt {

struct StepRecord {
  int64_t step;  // optimizer steps completed
  double loss, lr, grad_norm, ms;
  double val_loss;  // < 0: not evaluated this step
};

struct RunSummary {
  int world = 1;
  int64_t steps_done = 0, steps_this_run = 0;
  double final_train_loss = 0, final_val_loss = -1, initial_val_loss = -1, tokens_per_second = 0;
  std::vector<double> step_ms;
  size_t params = 0, padded_params = 0;
  std::string config_yaml;
  int stage = 0;
  std::string grad_path;
  ZeroConfig zero;
  CommStats comm;
  const MemoryLedger* ledger = nullptr;
  int dtype_bytes = 4;
  uint64_t persistent_bytes = 0, live_params_peak_bytes = 0;  // stage 3
  std::string device;
  int nodes = 1, ranks_per_node = 1;
  // The emulated cluster's description (the JSON file ZT_CLUSTER names, written
  // by scripts/cluster.sh), or "".
  std::string cluster_text;
};

class RunOutputs {
 public:
  RunOutputs(const std::string& run_dir, bool writer);
  ~RunOutputs();
  // Opens metrics.jsonl, keeping only records up to start_step (resume).
  void open_metrics(int64_t start_step);
  // The progress line is printed every log_every steps (0: only on the first, last
  // and evaluating steps); metrics.jsonl gets every step.
  void step(const StepRecord& r, int total_steps, double tok_per_s, double elapsed_s,
            int steps_this_run, int log_every);
  void sample(int64_t step, const std::string& text);
  void summary(const RunSummary& s);

 private:
  std::string dir_;
  bool writer_;
  FILE* metrics_ = nullptr;
};

}  // namespace zt
