// system.fault_inject: "RANK:STEP:exit|throw" makes one rank fail at the start
// of one step, to prove that a failed rank takes the whole job down. "exit"
// ends the process abruptly (as a crash would); "throw" raises an error that
// goes through the normal error path (message, MPI_Abort).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace zt {

struct FaultInjection {
  int rank = -1;
  int64_t step = -1;
  bool exit_abruptly = false;
  void maybe_fail(int my_rank, int64_t my_step) const {
    if (my_rank != rank || my_step != step) return;
    if (exit_abruptly) {
      std::fprintf(stderr, "zerotrain: rank %d: fault injection: exiting at step %lld\n", rank,
                   static_cast<long long>(step));
      std::fflush(stderr);
      std::_Exit(3);
    }
    throw std::runtime_error("fault injection: error thrown at step " + std::to_string(step));
  }
};

// The config loader has already checked the syntax.
inline FaultInjection parse_fault_injection(const std::string& spec) {
  FaultInjection f;
  if (spec.empty()) return f;
  const size_t a = spec.find(':'), b = spec.find(':', a + 1);
  f.rank = std::stoi(spec.substr(0, a));
  f.step = std::stoll(spec.substr(a + 1, b - a - 1));
  f.exit_abruptly = spec.substr(b + 1) == "exit";
  return f;
}

}  // namespace zt
