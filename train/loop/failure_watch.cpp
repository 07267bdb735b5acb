#include "train/loop/failure_watch.h"

#include <csignal>
#include <cstdio>

#include "train/io/atomic_file.h"
#include "train/loop/failure_record.h"
#include "train/loop/fault_stop.h"

namespace zt {
namespace {

PeerWatch* g_watch = nullptr;  // the running watch, for watch_position
constexpr int kStopSignals[2] = {SIGTERM, SIGINT};
struct sigaction g_previous[2];

// Tells the watch first, then does what was done before: the trainer's handler
// (it sets the flag its loop checks), or the default action.
void chained_stop_handler(int sig) {
  PeerWatch::notify_signal(sig);
  const struct sigaction& before = g_previous[sig == SIGTERM ? 0 : 1];
  if (before.sa_handler == SIG_IGN) return;
  if (before.sa_handler == SIG_DFL) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  before.sa_handler(sig);
}

}  // namespace

FailureWatch::FailureWatch(const SystemConfig& sys, const std::string& run_dir,
                           CountingCommunicator& comm)
    : comm_(comm), run_dir_(run_dir) {
  comm_.on_annotate([this](Phase p, int micro) { engine_phase(p, micro); });
  if (comm.world() == 1 || sys.failure_timeout_s == 0) return;
  PeerWatchSettings s;
  s.heartbeat_ms = sys.heartbeat_ms;
  s.failure_timeout_s = sys.failure_timeout_s;
  watch_.reset(new PeerWatch(s, [this](const FailureReport& r) {
    std::fflush(stdout);
    std::string line = failure_line(r);
    try {
      write_failure_record(run_dir_, r);
      line += "; record: " + failure_record_path(run_dir_, r.rank);
    } catch (const IoError& e) {
      line += "; no record: " + std::string(e.what());
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }));
  g_watch = watch_.get();
  for (int i = 0; i < 2; i++) {
    struct sigaction chained {};
    chained.sa_handler = chained_stop_handler;
    chained.sa_flags = SA_RESTART;
    sigemptyset(&chained.sa_mask);
    sigaction(kStopSignals[i], &chained, &g_previous[i]);
  }
}

FailureWatch::~FailureWatch() {
  comm_.on_annotate(nullptr);
  if (!watch_) return;
  for (int i = 0; i < 2; i++) sigaction(kStopSignals[i], &g_previous[i], nullptr);
  g_watch = nullptr;
  watch_.reset();
}

void FailureWatch::engine_phase(Phase p, int micro) {
  if (watch_) watch_->set_engine_phase(phase_name(p), micro);
  // The engine's step is inside the trainer's zero_step, which stops on its own.
  fault_stop_point(fault_stop_step(), p == Phase::Forward    ? "forward"
                                      : p == Phase::Backward ? "backward"
                                                             : "");
}

void watch_position(int64_t step, const char* phase) {
  if (g_watch) g_watch->set_position(step, phase);
  fault_stop_point(step, phase);
}

}  // namespace zt
