// ZT_FAULT_STOP_AT=STEP:PHASE:RANK, a test hook (docs/recovery.md, "Placing a
// failure in a phase"): rank RANK, on first entering PHASE of optimizer step
// STEP (counted from 0, as the failure records count), stops itself with
// SIGSTOP, so that a test or scripts/recovery_study.sh can see it stopped
// (state T) and then do the real failure (kill -9 of the rank, or
// scripts/cluster.sh kill-node of its node) at a known point of the step.
// PHASE is one of the failure records' phases (data, forward, backward,
// reduce, zero_step, eval, sample, checkpoint) or snapshot_copy: inside the
// background copy of the snapshot of STEP steps done (it runs beside step
// STEP), after a third of the slot is written, so that the slot is torn.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace zt {

struct FaultStop {
  int64_t step = 0;
  std::string phase;
  int rank = 0;
};

// The variable's value, checked; ConfigError (one line) when malformed.
FaultStop parse_fault_stop(const std::string& value);

// Reads ZT_FAULT_STOP_AT once (nothing when it is unset or when `recovering`:
// a supervisor's relaunch repeats the command line and would stop again).
// Throws ConfigError for a malformed value or a rank outside the job.
void arm_fault_stop(int rank, int world, bool recovering);

// Where this rank is now; stops the process when it is the armed point
// (once). `phase` names as above; the trainer's and the engine's phases come
// through watch_position (train/loop/failure_watch.h). One test of a pointer
// when nothing is armed.
void fault_stop_point(int64_t step, const char* phase);
// The optimizer step the trainer last named, for the engine's phases.
int64_t fault_stop_step();

}  // namespace zt
