// The process's place in the job and its backend: MPI rank/world, the local
// rank (which GPU, how many BLAS threads), the Ops backend for system.device and
// the counting communicator ZeRO talks through.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/ops.h"
#include "train/config/config.h"
#include "zero/comm/comm_stats.h"

namespace zt {

struct Runtime {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<CountingCommunicator> comm;
  std::string device_note;   // e.g. "device auto: no GPU (reason), using the CPU"
  int ranks_on_machine = 1;  // sharing its cores: the whole job on an emulated cluster
  int cores = 1;             // this machine's
  int cpu_threads = 1;       // per rank (BLAS, host AdamW): cores / ranks_on_machine, at least 1
  bool waits_sleep = false;  // MPI waits sleep between tests (zero/comm/mpi_polling.h)
};

// MPI must be initialised. Throws std::runtime_error with one line on failure.
Runtime make_runtime(const SystemConfig& sys);
void mpi_ranks(int* rank, int* world, int* local_rank, int* local_size);
// Which node each rank runs on (ranks sharing memory: MPI_COMM_TYPE_SHARED).
NodeMap job_nodes();
// Host-side sums across ranks for metrics (not ZeRO traffic, so not counted).
double sum_over_ranks(double x);
double min_over_ranks(double x);
void barrier_all();
// Collective: the message of the lowest rank whose `mine` is not empty, on every
// rank; "" when no rank has one. Lets all ranks act on one rank's failure alike.
std::string first_error_over_ranks(const std::string& mine);
// Collective: every rank's `mine` (the same count on each), in rank order.
std::vector<uint64_t> allgather_u64(const std::vector<uint64_t>& mine);
// Any rank's fatal error: flush stdout, print "zerotrain: rank R: what" and take
// the job down.
[[noreturn]] void abort_job(const std::string& what);

// An error that every rank raised alike, after agreeing on it (a failed
// checkpoint write): rank 0 prints it once and every rank exits with status 1.
struct JobError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace zt
