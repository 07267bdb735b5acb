#include "train/loop/fault_stop.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "train/config/config.h"

namespace zt {
namespace {

constexpr const char* kPhases[] = {"data", "forward", "backward",   "reduce",       "zero_step",
                                   "eval", "sample",  "checkpoint", "snapshot_copy"};

std::optional<FaultStop> g_armed;
const FaultStop* g_point = nullptr;  // &*g_armed once armed: the cheap test
std::atomic<bool> g_fired{false};
std::atomic<int64_t> g_step{-1};

bool whole_number(const std::string& s) {
  return !s.empty() && s.size() <= 12 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

FaultStop parse_fault_stop(const std::string& value) {
  std::string phases;
  for (const char* p : kPhases) phases += std::string(phases.empty() ? "" : ", ") + p;
  const std::string usage =
      "ZT_FAULT_STOP_AT: '" + value +
      "': expected STEP:PHASE:RANK (STEP and RANK whole numbers, PHASE one of " + phases + ")";
  const size_t a = value.find(':'), b = a == std::string::npos ? a : value.find(':', a + 1);
  if (b == std::string::npos || value.find(':', b + 1) != std::string::npos)
    throw ConfigError(usage);
  FaultStop f;
  const std::string step = value.substr(0, a), rank = value.substr(b + 1);
  f.phase = value.substr(a + 1, b - a - 1);
  bool known = false;
  for (const char* p : kPhases) known = known || f.phase == p;
  if (!whole_number(step) || !whole_number(rank) || !known) throw ConfigError(usage);
  f.step = std::stoll(step);
  f.rank = std::stoi(rank);
  return f;
}

void arm_fault_stop(int rank, int world, bool recovering) {
  const char* value = std::getenv("ZT_FAULT_STOP_AT");
  if (value == nullptr || recovering) return;
  const FaultStop f = parse_fault_stop(value);
  if (f.rank >= world)
    throw ConfigError("ZT_FAULT_STOP_AT: '" + std::string(value) + "': rank " +
                      std::to_string(f.rank) + " is not in this job of " + std::to_string(world) +
                      " ranks");
  if (f.rank != rank) return;
  g_armed = f;
  g_point = &*g_armed;
}

void fault_stop_point(int64_t step, const char* phase) {
  if (g_point == nullptr) return;
  g_step.store(step, std::memory_order_relaxed);
  if (step != g_point->step || g_point->phase != phase || g_fired.exchange(true)) return;
  std::fprintf(stderr,
               "zerotrain: rank %d: ZT_FAULT_STOP_AT: stopping (SIGSTOP) at step %lld, phase %s\n",
               g_point->rank, static_cast<long long>(step), phase);
  std::fflush(stderr);
  // The peer watch's thread sends a phase change at once; this leaves it time
  // to run on a loaded host, so that the survivors' records name this phase.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::raise(SIGSTOP);
}

int64_t fault_stop_step() { return g_step.load(std::memory_order_relaxed); }

}  // namespace zt
