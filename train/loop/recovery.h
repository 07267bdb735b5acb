// The training loop's side of recovery (docs/recovery.md): `train --recover`'s
// initial state, and the in-memory snapshots a run takes for it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "train/config/config.h"
#include "train/io/checkpoint_format.h"
#include "train/io/run_outputs.h"
#include "train/loop/snapshotter.h"
#include "zero/comm/communicator.h"
#include "zero/stages/engine.h"

namespace zt {

// Collective --recover: the newest in-memory snapshots that together cover the
// state (own node's store, else replicas over `comm`), else the newest
// complete disk checkpoint, said in one line; neither is an error (DataError),
// never a silent fresh start. Rank 0 prints where each rank's state came from
// and the restore time. Returns the step the run continues from. `part`: the
// rank's part of the whole model on a grid (whole_runs; empty: the whole model).
int64_t recover_initial_state(const std::string& run_dir, const GPTConfig& model,
                              const std::vector<WholeRun>& part, const TokenizerIdentity& tokenizer,
                              ZeroEngine& engine, Communicator& comm);

// Collective: the run's snapshots when snapshot_interval(cfg.train) > 0, else
// nullptr. Rank 0 prints the store's place and size.
std::unique_ptr<Snapshotter> start_snapshots(const std::string& run_dir, const Config& cfg,
                                             const std::vector<WholeRun>& part, ZeroEngine& engine,
                                             int64_t start_step, int rank, int world);

// Collective, after each step: the copy that step joined (if any) into its
// record and the run's figures, as the slowest rank measured it.
void record_snapshot_costs(Snapshotter& s, StepRecord& rec, SnapshotFigures& f);

}  // namespace zt
