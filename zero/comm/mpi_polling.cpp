#include "zero/comm/mpi_polling.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace zt {
namespace {
std::atomic<bool> g_waits_sleep{true};
}  // namespace

void set_waits_sleep(bool sleep) { g_waits_sleep = sleep; }
bool waits_sleep() { return g_waits_sleep; }

void poll_until(const std::function<bool()>& done) {
  constexpr std::chrono::microseconds kSpin{100};
  constexpr std::chrono::microseconds kMinSleep{50};
  constexpr std::chrono::microseconds kMaxSleep{1000};
  const auto start = std::chrono::steady_clock::now();
  const auto spin_end = start + kSpin;
  const bool sleep = g_waits_sleep;
  while (!done()) {
    if (!sleep) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now < spin_end) continue;
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(now - start);
    std::this_thread::sleep_for(std::clamp(waited / 20, kMinSleep, kMaxSleep));
  }
}

void complete_polling(MPI_Request& request) {
  poll_until([&request] {
    int flag = 0;
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  });
}

}  // namespace zt
