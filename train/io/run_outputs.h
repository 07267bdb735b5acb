// What a run writes: the progress line per step, samples, RUN/config.yaml,
// RUN/metrics.jsonl (one JSON object per optimizer step) and RUN/summary.json.
// Only rank 0 writes. Every write is checked (train/io/atomic_file.h): a metrics
// line is appended whole or not at all, config.yaml and summary.json replace
// the old file atomically, and a failure throws IoError naming the file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "model/emulated_gpt.h"
#include "model/memory_ledger.h"
#include "train/io/atomic_file.h"
#include "zero/comm/comm_stats.h"
#include "zero/zero_config.h"

namespace zt {

struct StepRecord {
  int64_t step;  // optimizer steps completed
  double loss, lr, grad_norm, ms;
  double val_loss;        // < 0: not evaluated this step
  bool emulated = false;  // system.compute: emulate: no loss and no meaningful norm exist
  // HellaSwag counts (train.hellaswag_every); examples < 0: not evaluated this step.
  int64_t hellaswag_examples = -1, hellaswag_correct = 0, hellaswag_correct_norm = 0;
  // In-memory snapshots (train/loop/snapshotter.h), measured, the slowest rank's:
  // the copy joined in this step (it overlapped this step's forward/backward)
  // and how long the step waited for it; < 0: none joined this step.
  double snapshot_copy_ms = -1, snapshot_wait_ms = -1;
};

// summary.json's "snapshots": the store's planned size and the measured costs.
struct SnapshotFigures {
  int every = 0;
  uint64_t region_bytes = 0;  // this rank's region (rank 0's)
  uint64_t node_bytes = 0;    // its node's store
  int node_ranks = 0;
  std::vector<double> copy_ms, wait_ms;  // per joined copy, the slowest rank's
};

// One step's compute: wall time less the time blocked in the communicator's
// wait(), per micro-step (forward + backward, averaged over the step's
// micro-steps) and for the optimizer step.
struct ComputeSample {
  double micro_step_ms, optimizer_ms;
};

// DeepSpeed's start-up calls as this rank issued them (zero/schedule/
// deepspeed_startup.h), before any state was loaded: summary.json's comm.startup.
struct StartupCounts {
  CommStats comm;
  int barriers = 0;
};

// A pipeline's step, per stage: the bubble by formula beside what each
// stage's ranks measured (the median over steps of the time blocked in the
// pipeline's receives, alone and over the median step).
struct PipelineFigures {
  int stages = 1, micro_batches = 1;
  std::string schedule;
  double bubble_formula = 0;                                    // (P - 1) / (m + P - 1)
  std::vector<double> recv_wait_ms_median, recv_wait_fraction;  // per stage
};

struct RunSummary {
  int world = 1;
  int64_t steps_done = 0, steps_this_run = 0;
  double final_train_loss = 0, final_val_loss = -1, initial_val_loss = -1, tokens_per_second = 0;
  std::vector<double> step_ms;
  ComputeSample compute{};  // per step the slowest rank's, median over the steps after the first
  int micro_steps = 1;
  size_t params = 0, padded_params = 0;
  std::string config_json;  // the effective config
  int stage = 0;
  std::string grad_path;
  ZeroConfig zero;
  CommStats comm;
  StartupCounts startup;
  const MemoryLedger* ledger = nullptr;
  const MemoryLedger* host_ledger = nullptr;  // the backend's alloc_host (offload)
  // offload_optimizer: the last step's gradient bytes to the host, started as
  // the engine reported them final, and at the step.
  uint64_t offload_grad_bytes_early = 0, offload_grad_bytes_at_step = 0;
  uint64_t offload_param_read_ahead_bytes = 0;  // offload_param nvme: pieces gathers found read
  int dtype_bytes = 4;
  uint64_t persistent_bytes = 0, live_params_peak_bytes = 0;  // stage 3
  // The training model's activation buffers (train.recompute), measured and by
  // activation_bytes().
  std::string recompute = "none";
  uint64_t activations_per_micro_batch = 0, activations_per_micro_batch_formula = 0;
  std::string device;
  int nodes = 1, ranks_per_node = 1;
  // How the ranks share this machine's cores (train/loop/runtime.h).
  int ranks_on_machine = 1, cores = 1, cpu_threads = 1;
  bool waits_sleep = false;
  // The emulated cluster's description (the JSON file ZT_CLUSTER names, written
  // by scripts/cluster.sh, checked to be a JSON object), or "".
  std::string cluster_text;
  // system.compute: emulate: the durations waited for instead of computing
  // (no loss exists); nullptr for a real run.
  const EmulatedDurations* emulated = nullptr;
  const SnapshotFigures* snapshots = nullptr;  // nullptr: no in-memory snapshots
  const PipelineFigures* pipeline = nullptr;   // nullptr: no pipeline
};

// A resumed run keeps the records of a metrics log up to this size.
constexpr uint64_t kMetricsMaxBytes = uint64_t(1) << 30;
// The step of one whole metrics.jsonl record, or -1 for a cut or garbled line.
int64_t record_step(const std::string& line);
// The newest step RUN/metrics.jsonl holds a whole record of (0: none, or no log).
int64_t last_logged_step(const std::string& run_dir);

class RunOutputs {
 public:
  RunOutputs(const std::string& run_dir, bool writer);
  ~RunOutputs();
  void write_config(const std::string& config_yaml);
  // Opens metrics.jsonl, keeping only the whole records up to start_step (resume).
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
  std::unique_ptr<AppendFile> metrics_;
};

}  // namespace zt
