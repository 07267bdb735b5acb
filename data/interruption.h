// Long data preparation stops cleanly on SIGINT, SIGTERM or SIGHUP. While an
// InterruptScope is alive a signal only records itself; the work polls
// check_interrupted() between lines and pieces and unwinds with Interrupted,
// so destructors remove the partial output (prepare's hidden temporary
// directory) before the command exits 128 + the signal, as a shell would.
#pragma once
#include <signal.h>

#include <stdexcept>

namespace zt {

struct Interrupted : std::runtime_error {
  explicit Interrupted(int sig);
  int signal;
};

class InterruptScope {
 public:
  InterruptScope();   // installs the handlers
  ~InterruptScope();  // restores the previous ones
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct ::sigaction previous_[3];  // SIGINT, SIGTERM, SIGHUP as they were
};

// Throws Interrupted when a signal arrived inside an InterruptScope.
void check_interrupted();

}  // namespace zt
