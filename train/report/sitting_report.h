// `zerotrain report` on a repeated-sitting run set, as `scripts/sweep.sh
// --repeat K` writes it: RUNS_DIR/sitting-k/NAME/summary.json. Every sitting
// is read like a plain RUNS_DIR; each speed-up is taken within one sitting
// (this configuration's run over the DeepSpeed-default configuration's run of
// the same sitting) and summarised over the sittings with train/report/
// sitting_stats.h: median, bootstrap interval, min and max, rankings and how
// stable they are.
#pragma once
#include <string>
#include <vector>

#include "train/report/report_table.h"

namespace zt {

struct SittingSet {
  std::vector<int> sittings;                // k of every RUNS_DIR/sitting-k, ascending
  std::vector<std::string> configurations;  // the NAMEs, in row order
  // "sitting-k lacks NAME ..." for each run that some other sitting has.
  std::vector<std::string> missing;
  std::vector<std::string> outside;  // RUNS_DIR's other directories, left out
};

// Whether RUNS_DIR holds a directory whose name starts with "sitting-".
bool is_sitting_set(const std::string& runs_dir);

// Every sitting's runs, speed-ups filled in within each sitting, as one list
// ordered by configuration, then sitting; run and baseline_run read
// "sitting-k/NAME". Throws std::runtime_error (one line) for a "sitting-*"
// directory not named sitting-<k> with k >= 1, for an unreadable summary, and
// when no configuration has a run in every sitting (nothing to compare).
RunsDir load_sitting_set(const std::string& runs_dir, SittingSet& set);

// report.csv: report_csv's columns, one row per run, then configuration,
// sitting, sittings and median, ci_low, ci_high, min, max of both speed-ups of
// the run's configuration over the sittings.
std::string sitting_csv(const RunsDir& runs, const SittingSet& set);

// report.md's sections on the sittings: tokens/s per sitting, the speed-ups
// over the sittings, rankings with the pairs that are not separated, stability.
std::string sitting_markdown(const RunsDir& runs, const SittingSet& set);

}  // namespace zt
