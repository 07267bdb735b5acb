// Waiting on an MPI collective must leave the core to others: rank 0 waits
// 400 ms for peers that join late, and its thread may use only a small share
// of that time on a CPU. MPI_Wait spun (sched_yield) for all of it, and on
// emulated clusters such spinning ranks kept the cores from the ranks they
// waited for (docs/clusters.md, "Stalls of seconds").
#include <mpi.h>
#include <time.h>

#include <chrono>
#include <thread>
#include <vector>

#include "model/ops.h"
#include "tests/support/catch.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

}  // namespace

TEST_CASE("a rank waiting for late peers sleeps instead of spinning", "[mpi]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W < 2) return;
  auto ops = make_cpu_ops();
  auto comm = make_mpi_communicator(*ops);
  std::vector<float> x(1024, 1.0f);
  comm->barrier();
  if (comm->rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_s();
  comm->all_reduce(x.data(), x.size(), DType::F32)->wait();
  const double cpu = thread_cpu_s() - cpu0;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  CHECK(x[0] == static_cast<float>(W));
  if (comm->rank() == 0) {
    INFO("rank 0 waited " << wall << " s and used " << cpu << " s of CPU");
    REQUIRE(wall >= 0.3);
    CHECK(cpu < 0.15 * wall);
  }
}

}  // namespace zt
