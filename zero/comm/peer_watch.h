// Failure detection between ranks, beside the communicator (docs/recovery.md,
// "Failure detection"). Every rank listens on a TCP port, the ranks exchange
// host, address and port with one MPI all-gather, and each keeps one
// connection to every other rank (a full mesh: each survivor sees each loss
// itself, in one hop, and its bound does not depend on a third rank).
// A background thread sends a heartbeat every heartbeat period carrying the
// rank's step and phase, and reads its peers'. A peer is lost when its
// connection closes without a goodbye (its process died: the kernel closes
// its sockets at once) or when nothing arrives from it for failure_timeout_s
// (stopped, hung node, link down). The first survivor to see a loss tells the
// others (a Leaving message naming the lost ranks), hands the facts to
// `on_failure` (which records them) and takes the job down with MPI_Abort.
//
// A stop signal (SIGTERM, SIGINT) is passed on by notify_signal(): a loss seen
// within signal_grace_s after it is still recorded, and the process then dies
// of that signal (mpirun SIGTERMs the survivors when one rank dies, and
// SIGKILLs them odls_base_sigkill_timeout = 1 s later). A signal with no loss
// within the grace is an ordinary stop: the watch keeps sending heartbeats
// but records nothing more, so a stopping job never reports its own ranks.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zero/comm/peer_liveness.h"

namespace zt {

struct PeerWatchSettings {
  int heartbeat_ms = 100;
  double failure_timeout_s = 60;
  double signal_grace_s = 0.5;
  double connect_timeout_s = 60;  // building the mesh at start
};

// What a survivor knows at the moment it detects a loss.
struct FailureReport {
  int rank = 0;
  std::string host;
  int64_t step = -1;
  int32_t micro = 0;
  std::string phase, engine_phase;
  std::vector<PeerState> lost;
  WatchInstant detected;
  int stop_signal = 0;  // a stop signal that arrived before the detection, 0: none
  double heartbeat_s = 0, failure_timeout_s = 0;
};

WatchInstant watch_now();

class PeerWatch {
 public:
  // Collective over MPI_COMM_WORLD. Throws std::runtime_error (one line) when
  // the mesh cannot be built. `on_failure` runs at most once, on the watch's
  // thread; when it returns, the process ends (the signal's death, or MPI_Abort).
  PeerWatch(const PeerWatchSettings& s, std::function<void(const FailureReport&)> on_failure);
  // Says goodbye to every peer and closes: a finished rank is not a failure.
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Where this rank is. `phase` must outlive the watch (a string literal);
  // 23 characters are sent. A change is sent to the peers at once, so a lost
  // peer's record names where it was when it stopped, not a heartbeat earlier.
  void set_position(int64_t step, const char* phase) {
    const int64_t was_step = step_.exchange(step, std::memory_order_relaxed);
    const char* was_phase = phase_.exchange(phase, std::memory_order_relaxed);
    if (was_step != step || was_phase != phase) position_changed();
  }
  // The engine's finer phase inside the trainer's (forward, backward, step; 7 characters).
  void set_engine_phase(const char* phase, int micro) {
    micro_.store(micro, std::memory_order_relaxed);
    if (engine_phase_.exchange(phase, std::memory_order_relaxed) != phase) position_changed();
  }
  // Async-signal-safe: tells the running watch (if any) that a stop signal came.
  static void notify_signal(int sig);

 private:
  struct Peer;
  void position_changed();
  void wake() const;
  void connect_mesh(double timeout_s);
  void run();
  WatchMessage message(WatchKind kind) const;
  void send_to_all(const WatchMessage& m);
  void read_from(Peer& p, WatchInstant now);
  void flush(Peer& p);
  void say_goodbye();
  [[noreturn]] void fail(WatchInstant now);

  PeerWatchSettings settings_;
  std::function<void(const FailureReport&)> on_failure_;
  int rank_ = 0, world_ = 1;
  std::vector<std::string> hosts_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for this rank
  std::unique_ptr<PeerLiveness> liveness_;
  int wake_[2] = {-1, -1};  // self-pipe: wakes the thread
  std::atomic<bool> stop_requested_{false};
  int stop_signal_ = 0;
  WatchInstant signal_at_;
  bool reporting_ = true;
  std::atomic<int64_t> step_{-1};
  std::atomic<const char*> phase_{"setup"};
  std::atomic<const char*> engine_phase_{""};
  std::atomic<int> micro_{0};
  std::thread thread_;
};

}  // namespace zt
