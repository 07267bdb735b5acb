#include "data/interruption.h"

#include <cstring>
#include <string>

namespace zt {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t g_signal = 0;

extern "C" void record_signal(int sig) { g_signal = sig; }

}  // namespace

Interrupted::Interrupted(int sig)
    : std::runtime_error(std::string("interrupted by ") + (sig == SIGINT    ? "SIGINT"
                                                           : sig == SIGTERM ? "SIGTERM"
                                                                            : "SIGHUP")),
      signal(sig) {}

InterruptScope::InterruptScope() {
  g_signal = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) sigaction(kSignals[i], &sa, &previous_[i]);
}

InterruptScope::~InterruptScope() {
  for (int i = 0; i < 3; i++) sigaction(kSignals[i], &previous_[i], nullptr);
}

void check_interrupted() {
  if (g_signal != 0) throw Interrupted(g_signal);
}

}  // namespace zt
