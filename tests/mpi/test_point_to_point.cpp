// Communicator::send/recv (recovery's state transfers): each rank sends a
// message of its own to every other rank, posted before the receives, and
// gets each peer's; the counting wrapper passes them through uncounted; one
// process messages itself through the single-process communicator.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "model/ops.h"
#include "tests/support/catch.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

// What rank `from` sends rank `to`: its length and values depend on both.
std::vector<float> message(int from, int to) {
  std::vector<float> m(100 + 37 * from + to);
  for (size_t i = 0; i < m.size(); i++) m[i] = static_cast<float>(from * 1000 + to) + 0.25f * i;
  return m;
}

}  // namespace

TEST_CASE("send and recv deliver every pair's message, uncounted", "[mpi]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  auto ops = make_cpu_ops();
  CountingCommunicator comm(W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops));
  const int me = comm.rank();
  std::vector<std::vector<float>> out(W), in(W);
  std::vector<Handle> pending;
  for (int peer = 0; peer < W; peer++) {
    out[peer] = message(me, peer);
    pending.push_back(comm.send(out[peer].data(), out[peer].size(), DType::F32, peer, 7));
  }
  for (int peer = 0; peer < W; peer++) {
    in[peer].assign(message(peer, me).size(), -1.0f);
    pending.push_back(comm.recv(in[peer].data(), in[peer].size(), DType::F32, peer, 7));
  }
  for (Handle& h : pending) h->wait();
  for (int peer = 0; peer < W; peer++) CHECK(in[peer] == message(peer, me));
  for (const PrimitiveStats& p : comm.stats().by_primitive) CHECK(p.calls == 0);
}

}  // namespace zt
