// The trainer's side of the peer watch (zero/comm/peer_watch.h): started from
// system.heartbeat_ms and system.failure_timeout_s when W > 1 and the timeout
// is not 0; follows the engine's phases through the communicator; passes stop
// signals (SIGTERM, SIGINT) to the watch before the trainer's own handler
// runs; and on a detected loss writes RUN/failure/rank_RRRRR.json and one line
// on stderr (train/loop/failure_record.h) before the watch ends the process.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "train/config/config.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/peer_watch.h"

namespace zt {

class FailureWatch {
 public:
  // Collective (every rank of the job). Install the trainer's signal handlers first.
  FailureWatch(const SystemConfig& sys, const std::string& run_dir, CountingCommunicator& comm);
  // Goodbye to the peers; the signal handlers as they were.
  ~FailureWatch();
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

 private:
  // The engine's phase (forward, backward, step), to the watch and to
  // ZT_FAULT_STOP_AT's hook (train/loop/fault_stop.h).
  void engine_phase(Phase p, int micro);
  CountingCommunicator& comm_;
  std::string run_dir_;
  std::unique_ptr<PeerWatch> watch_;
};

// Where the trainer is: the optimizer step in progress (from 0) and its phase,
// a string literal (docs/recovery.md lists them). Also the point at which
// ZT_FAULT_STOP_AT stops a rank; otherwise nothing without a running watch.
void watch_position(int64_t step, const char* phase);

}  // namespace zt
