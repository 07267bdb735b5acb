// Waiting on MPI must leave the core to others: rank 0 waits 400 ms for peers
// that join late, and its thread may use only a small share of that time on a
// CPU. MPI_Wait and the blocking collectives spun (sched_yield) for all of it,
// and on emulated clusters such spinning ranks kept the cores from the ranks
// they waited for (docs/clusters.md, "Stalls of seconds"). Every kind of wait
// is checked: a handle's, the staged calls', the flags', barriers and the
// trainer's own sums over the job.
#include <mpi.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "model/host_floats.h"
#include "model/ops.h"
#include "tests/support/catch.h"
#include "train/loop/runtime.h"
#include "zero/comm/communicators.h"
#include "zero/comm/mpi_polling.h"

namespace zt {
namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Runs `call` on every rank after the others than rank 0 slept 400 ms, and
// checks on rank 0 that the wait used under 15% of its time on a CPU.
template <typename Call>
void check_rank0_waits_asleep(Communicator& comm, Call call) {
  comm.barrier();
  if (comm.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_s();
  call();
  const double cpu = thread_cpu_s() - cpu0;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (comm.rank() == 0) {
    INFO("rank 0 waited " << wall << " s and used " << cpu << " s of CPU");
    REQUIRE(wall >= 0.3);
    CHECK(cpu < 0.15 * wall);
  }
}

}  // namespace

TEST_CASE("a rank waiting for late peers sleeps instead of spinning", "[mpi][mpi_wait]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W < 2) return;
  auto ops = make_cpu_ops();
  auto comm = make_mpi_communicator(*ops);
  set_waits_sleep(true);  // as where ranks share cores (this machine's tests)
  SECTION("a non-blocking fp32 all-reduce, waited on") {
    std::vector<float> x(1024, 1.0f);
    check_rank0_waits_asleep(*comm,
                             [&] { comm->all_reduce(x.data(), x.size(), DType::F32)->wait(); });
    CHECK(x[0] == static_cast<float>(W));
  }
  SECTION("a staged bf16 all-reduce, which completes before it returns") {
    std::vector<uint16_t> x(1024, 0x3f80);  // bf16 1.0
    check_rank0_waits_asleep(*comm, [&] { comm->all_reduce(x.data(), x.size(), DType::BF16); });
    CHECK(x[0] == float_to_bf16(static_cast<float>(W)));
  }
  SECTION("an overflow flag (u8 maximum)") {
    std::vector<uint8_t> flag(1, comm->rank() == W - 1 ? 1 : 0);
    check_rank0_waits_asleep(*comm, [&] { comm->all_reduce(flag.data(), 1, DType::U8); });
    CHECK(flag[0] == 1);
  }
  SECTION("a barrier") {
    check_rank0_waits_asleep(*comm, [&] { comm->barrier(); });
  }
  SECTION("the trainer's per-step sum over the job's ranks (the loss, the stop signal)") {
    double sum = 0;
    check_rank0_waits_asleep(*comm, [&] { sum = sum_over_ranks(1.0); });
    CHECK(sum == static_cast<double>(W));
  }
}

}  // namespace zt
