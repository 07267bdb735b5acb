#include "train/loop/runtime.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/cpu/cpu_matmul.h"
#include "zero/comm/communicators.h"
#include "zero/comm/mpi_polling.h"
#include "zero/comm/nccl_factory.h"

namespace zt {

void mpi_ranks(int* rank, int* world, int* local_rank, int* local_size) {
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, world);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, local_rank);
  MPI_Comm_size(local, local_size);
  MPI_Comm_free(&local);
}

NodeMap job_nodes() {
  int rank = 0, world = 1, leader = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  // A node is named by its lowest world rank; nodes are numbered in that order.
  MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(world);
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  NodeMap m;
  for (int l : leaders)
    m.node_of.push_back(
        static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), l) - distinct.begin()));
  return m;
}

Runtime make_runtime(const SystemConfig& sys) {
  Runtime rt;
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  // The ranks sharing this machine's cores: on an emulated cluster (ZT_CLUSTER,
  // set by scripts/cluster.sh) every rank of the job runs here, whatever node
  // (network namespace) MPI places it on.
  rt.ranks_on_machine = std::getenv("ZT_CLUSTER") ? world : local_size;
  // Oversubscribed CPU ranks share the cores rather than each taking all of
  // them: on 4 x 1 emulated on 2 cores, 2 BLAS threads per rank (counting one
  // rank per node) made 8 threads fight for 2 cores and the ranks reach every
  // collective far apart (docs/PMBS.md, "With time").
  rt.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  rt.cpu_threads = std::max(1, rt.cores / rt.ranks_on_machine);
  set_cpu_threads(rt.cpu_threads);
  // MPI waits sleep only where the ranks on this machine outnumber its cores
  // (zero/comm/mpi_polling.h).
  rt.waits_sleep = rt.ranks_on_machine > rt.cores;
  set_waits_sleep(rt.waits_sleep);

  std::string why;
  bool use_cuda = false;
  if (sys.device == "cuda") {
    if (!cuda_available(&why)) throw std::runtime_error("system.device: cuda: " + why);
    use_cuda = true;
  } else if (sys.device == "auto") {
    use_cuda = cuda_available(&why);
    if (!use_cuda)
      rt.device_note = "system.device auto: no usable GPU (" + why + "), using the CPU";
  }
  rt.ops = use_cuda ? make_cuda_ops(local_rank) : make_cpu_ops();

  std::unique_ptr<Communicator> inner;
  const bool want_nccl =
      use_cuda && world > 1 && (sys.communicator == "nccl" || sys.communicator == "auto");
  if (sys.communicator == "nccl" && !use_cuda)
    throw std::runtime_error("system.communicator: nccl needs system.device cuda");
  if (world == 1 && sys.communicator != "nccl") inner = make_single_communicator(*rt.ops);
  else if (want_nccl || (sys.communicator == "nccl")) inner = make_nccl_communicator(*rt.ops);
  else inner = make_mpi_communicator(*rt.ops);
  rt.comm.reset(new CountingCommunicator(std::move(inner)));
  rt.comm->set_nodes(job_nodes());
  return rt;
}

double sum_over_ranks(double x) {
  double out = x;
  MPI_Request r;
  MPI_Iallreduce(&x, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
  complete_polling(r);
  return out;
}

double min_over_ranks(double x) {
  double out = x;
  MPI_Request r;
  MPI_Iallreduce(&x, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, &r);
  complete_polling(r);
  return out;
}

void barrier_all() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  complete_polling(r);
}

std::string first_error_over_ranks(const std::string& mine) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int me = mine.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Request r;
  MPI_Iallreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &r);
  complete_polling(r);
  if (first == INT_MAX) return "";
  uint64_t n = rank == first ? mine.size() : 0;
  MPI_Ibcast(&n, 1, MPI_UINT64_T, first, MPI_COMM_WORLD, &r);
  complete_polling(r);
  std::string message = rank == first ? mine : std::string(n, ' ');
  MPI_Ibcast(&message[0], static_cast<int>(n), MPI_CHAR, first, MPI_COMM_WORLD, &r);
  complete_polling(r);
  return message;
}

std::vector<uint64_t> allgather_u64(const std::vector<uint64_t>& mine) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<uint64_t> all(mine.size() * static_cast<size_t>(world));
  MPI_Request r;
  MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                 static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD, &r);
  complete_polling(r);
  return all;
}

void abort_job(const std::string& what) {
  int rank = 0, world = 1, init = 0;
  MPI_Initialized(&init);
  if (init) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
  }
  std::fflush(stdout);
  std::fprintf(stderr, "zerotrain: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  if (init && world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace zt
