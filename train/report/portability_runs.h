// The run sets of `zerotrain report --portability`: one RUNS_DIR per system,
// holding RUNS_DIR/NAME/summary.json (one sweep) or
// RUNS_DIR/sitting-<k>/NAME/summary.json (repeated sittings; each
// configuration's tok/s is then the median over the sittings it ran in). A
// configuration is its run NAME. The system is named from what its runs
// recorded: the device (GPU or CPU model), emulated compute, the node layout,
// the emulated cluster's link and the host name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct ModelShape {
  int64_t params = 0;
  int n_layer = 0, n_head = 0, n_embd = 0, seq_len = 0, vocab_size = 0;
  bool operator==(const ModelShape& o) const;
  std::string text() const;  // "N params, L layers, H heads, C wide, T tokens, V vocab"
};

// One configuration as one system ran it.
struct PortabilityRun {
  std::string config;            // the run NAME
  std::string summary_path;      // of its first sitting (its config.yaml is beside it)
  double tokens_per_second = 0;  // the median over the sittings it ran in
  int sittings_ran = 1;
  ModelShape model;
  int world = 0, micro_batch = 0;
  // summary.json's "emulated_compute" (compute_mode "emulated"), else 0.
  double emulated_micro_step_ms = 0;  // the stated wait, time_scale applied
  // The system's peak FLOP/s for this run (all its ranks); 0 when unknown.
  // Filled in by assign_peaks (portability_peaks.h).
  double peak_flops = 0;
};

struct PortabilitySystem {
  std::string name;  // unique among the systems of one report
  // Not measured: the step-time model's prediction (portability_projection.h);
  // what was projected, for the report. "" for a measured system.
  std::string projection;
  std::string runs_dir;
  int sittings = 0;  // sitting-<k> directories read; 0: a plain run set
  // What the runs recorded, for the peak.
  std::string device;          // "cpu" or "cuda"
  std::string gpu, cpu, host;  // summary.json's "host" ("" where absent)
  bool emulated_compute = false;
  std::string emulated_device, emulated_source;
  // Filled in by assign_peaks: where the peak comes from, or why there is none.
  std::string peak_source, no_peak_reason;
  std::vector<PortabilityRun> runs;  // sorted by configuration name
};

// One RUNS_DIR. Throws std::runtime_error with one line when it is not a
// directory, holds no summary, a summary is unreadable, or its runs name two
// different systems.
PortabilitySystem load_portability_system(const std::string& runs_dir);

// Gives systems with the same name distinct ones: each such name gets
// " [RUNS_DIR's last component]" appended, or " [RUNS_DIR]" when that is
// shared too.
void disambiguate_system_names(std::vector<PortabilitySystem>& systems);

// Throws std::runtime_error naming the configuration and both systems when one
// configuration NAME was run with two different models.
void check_same_models(const std::vector<PortabilitySystem>& systems);

}  // namespace zt
