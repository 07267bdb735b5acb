// The one collective interface ZeRO talks to: MPI (host or device buffers),
// NCCL (device buffers, its own stream), or a single process (W = 1, no calls).
// Every call names its element type and may be non-blocking: it returns a
// handle the caller waits on. Reductions are sums. Buffers live in the memory
// space of the backend that created the communicator (host for the CPU backend,
// device for CUDA); MPI stages bf16 through fp32 since MPI has no bf16.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/ops.h"

namespace zt {

// A pending collective. wait() blocks until it completes (idempotent).
class CommHandle {
 public:
  virtual ~CommHandle() = default;
  virtual void wait() = 0;
  virtual bool done() = 0;  // non-blocking completion test
};
using Handle = std::unique_ptr<CommHandle>;

// Send and Recv: a pipeline's point-to-point messages, counted on each side
// (CountingCommunicator::send_counted); the collectives' interface is below.
enum class Primitive {
  AllReduce,
  ReduceScatter,
  AllGather,
  Reduce,
  Broadcast,
  AllToAll,
  Send,
  Recv,
  kCount
};
const char* primitive_name(Primitive p);  // "all_reduce", "reduce_scatter", ..., "send", "recv"

// Where in a step a collective is issued, and what it moves (for traces, plans
// and the summary's split of the bytes). Init: before the first step (the
// start-up calls of zero/schedule/deepspeed_startup.h).
enum class Phase { Forward, Backward, Step, Init };
const char* phase_name(Phase p);  // "fwd", "bwd", "step", "init"
// Activations: what tensor and pipeline parallelism move (activations, their
// gradients, the split loss's per-row parts).
enum class Purpose { Gradients, Parameters, Scalars, Activations, kCount };
const char* purpose_name(Purpose p);  // "gradients", "parameters", "scalars", "activations"
// The grid dimension a call runs along (DESIGN.md, "The parallel grid").
enum class Dimension { Data, Tensor, Pipeline, kCount };
const char* dimension_name(Dimension d);  // "data", "tensor", "pipeline"

// The ranks a call runs over: `size` ranks `stride` apart, the world cut into
// blocks of size * stride ranks. The world is {W, 1}; hpZ's groups and qgZ's
// intra-node groups are {G, 1} (G consecutive ranks); qgZ's inter-node groups
// are {W / G, G} (the ranks with one local index, one per node).
struct RankGroup {
  int size = 1;
  int stride = 1;
  // The world ranks of `rank`'s group, ascending (rank among them).
  std::vector<int> members_of(int rank) const;
  int index_of(int rank) const { return (rank % (size * stride)) / stride; }
  bool operator==(const RankGroup& o) const { return size == o.size && stride == o.stride; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;  // "mpi", "nccl", "single"

  // In place: buf[count] <- sum over ranks (uint8: the maximum, for flags).
  virtual Handle all_reduce(void* buf, size_t count, DType t) = 0;
  // recv[recv_count] <- rank's slice of sum(send[recv_count * world]).
  virtual Handle reduce_scatter(const void* send, void* recv, size_t recv_count, DType t) = 0;
  // recv[send_count * world] <- concatenation of every rank's send[send_count].
  virtual Handle all_gather(const void* send, void* recv, size_t send_count, DType t) = 0;
  // recv[count] at root <- sum of send over ranks (recv ignored elsewhere, may be null).
  virtual Handle reduce(const void* send, void* recv, size_t count, DType t, int root) = 0;
  // buf[count] <- root's buf (stage 3's trace check, int64).
  virtual Handle broadcast(void* buf, size_t count, DType t, int root) = 0;
  // recv[count * world]: block s is block rank() of rank s's send[count * world].
  virtual Handle all_to_all(const void* send, void* recv, size_t count, DType t) = 0;
  // Collective over every rank of this communicator: each passes its group's
  // members (ranks of this communicator, ascending, itself among them; all
  // members pass the same list) and gets a communicator over them, ranked in
  // that order.
  virtual std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) = 0;
  // Point-to-point, not collective: buf[count] to or from rank `peer` of this
  // communicator. MPI matches by (peer, tag) and completes in any order. NCCL
  // has no tags: it matches the messages between two ranks in posting order,
  // and each call runs on the communicator's stream in turn, so two ranks that
  // message each other must post in an order that lets each send meet its
  // receive. Recovery moves state with these, outside the steps: they are not
  // counted as a step's traffic.
  virtual Handle send(const void* buf, size_t count, DType t, int peer, int tag) = 0;
  virtual Handle recv(void* buf, size_t count, DType t, int peer, int tag) = 0;
  // The sends and receives posted between these run together (NCCL's
  // ncclGroupStart/End), so that a send and a receive between two ranks that
  // each post both cannot wait on each other; wait for their handles only
  // after group_end. MPI's non-blocking calls already run together.
  virtual void group_begin() {}
  virtual void group_end() {}
  virtual void barrier() = 0;
  // Tell a counting communicator where the caller is and what the next calls
  // move; others ignore them.
  virtual void annotate(Phase, int /*micro*/) {}
  virtual void purpose(Purpose) {}
  // Takes the whole job down with a message (a failed rank must not leave others waiting).
  [[noreturn]] virtual void abort(const std::string& why) = 0;
};

}  // namespace zt
