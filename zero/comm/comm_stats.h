// Counting wrapper around any Communicator: per primitive, the calls, the
// payload bytes as nccl-tests counts them (the whole buffer: all-reduce,
// reduce and broadcast their count, reduce-scatter its input, all-gather its
// output), the bus bytes (payload x nccl-tests' bus factor: all-reduce
// 2(W-1)/W, reduce-scatter and all-gather (W-1)/W, reduce and broadcast 1) and the seconds from
// issue to completion. Also the exposed time: seconds the caller spent blocked in wait().
// Optionally writes one JSON line per collective (system.comm_trace), with the phase and micro-step
// the engine annotated.
//
// Node-aware accounting: the bus bytes are split into intra- and inter-node
// under one stated assumption for every primitive but all-to-all: it runs as
// a ring over the ranks of its communicator in rank order (mpirun places ranks
// node by node), so each rank sends its bus bytes to the next rank of the
// group (wrapping around), and they cross the network exactly when that rank
// is on another node. An all-to-all sends count elements to each peer: the
// share to peers on other nodes crosses. NCCL's rings and Open MPI's ring
// algorithms for large messages move bytes this way; tree and recursive-
// doubling algorithms (small messages) send fewer bytes across nodes than this.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "zero/comm/communicator.h"

namespace zt {

struct PrimitiveStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  double bus_bytes = 0;
  double inter_node_bus_bytes = 0;  // the part of bus_bytes sent to another node
  double seconds = 0;
};

// Which node each rank is on (MPI_COMM_TYPE_SHARED), and the rule above.
struct NodeMap {
  std::vector<int> node_of;  // per rank
  // Both remembered after the first call (node_of is not to change
  // afterwards): the step-time model asks once per call, and a walk over
  // every rank each time made planning quadratic in W.
  int nodes() const;
  int ranks_per_node() const;  // the most ranks any node has
  bool sends_across(int rank) const;
  // The share of `rank`'s bus bytes of primitive p that crosses nodes (the rule above).
  double inter_node_share(Primitive p, int rank) const;
  // The nodes of these ranks, in this order (a sub-communicator's map).
  NodeMap of_members(const std::vector<int>& members) const;
  // A call over groups g on this (world) map: the share, averaged over the
  // ranks; remembered per group shape (node_of is not to change afterwards).
  double group_inter_node_share(Primitive p, const RankGroup& g) const;

 private:
  mutable std::map<std::tuple<bool, int, int, int>, double> share_cache_;
  mutable int nodes_ = 0, ranks_per_node_ = 0;  // 0: not yet counted

 public:
  // Ranks placed node by node, G per node.
  static NodeMap uniform(int world, int ranks_per_node);
};

struct CommStats {
  using PerPrimitive = std::array<PrimitiveStats, static_cast<int>(Primitive::kCount)>;
  PerPrimitive by_primitive{};  // all purposes
  std::array<PerPrimitive, static_cast<int>(Purpose::kCount)> by_purpose{};
  std::array<PerPrimitive, static_cast<int>(Dimension::kCount)> by_dimension{};
  double exposed_seconds = 0;  // time blocked in wait()
  PrimitiveStats& operator[](Primitive p) { return by_primitive[static_cast<int>(p)]; }
  const PrimitiveStats& operator[](Primitive p) const { return by_primitive[static_cast<int>(p)]; }
  CommStats minus(const CommStats& earlier) const;
};

double bus_factor(Primitive p, int world);
uint64_t payload_bytes(Primitive p, size_t count, DType t, int world);

// One collective as a trace records it.
struct CallRecord {
  int64_t step;
  Phase phase;
  Purpose purpose;
  int micro;
  Primitive primitive;
  DType dtype;
  size_t count;
  int root;
  RankGroup group;  // the ranks it ran over ({W, 1}: the world)
  Dimension dimension = Dimension::Data;
};

class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(std::unique_ptr<Communicator> inner);
  ~CountingCommunicator() override;
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  std::string name() const override { return inner_->name(); }
  Handle all_reduce(void* buf, size_t n, DType t) override;
  Handle reduce_scatter(const void* send, void* recv, size_t n, DType t) override;
  Handle all_gather(const void* send, void* recv, size_t n, DType t) override;
  Handle reduce(const void* send, void* recv, size_t n, DType t, int root) override;
  Handle broadcast(void* buf, size_t n, DType t, int root) override;
  Handle all_to_all(const void* send, void* recv, size_t n, DType t) override;
  // A sub-communicator counted into the world's stats, log and trace, as the
  // equally spaced group its members make (of a dimension's group: the same
  // ranks named in the world, along that dimension).
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override;
  // Of the world communicator: group `g` (its members must be
  // g.members_of(rank())), along grid dimension d.
  std::unique_ptr<CountingCommunicator> counted_subgroup(const RankGroup& g,
                                                         Dimension d = Dimension::Data);
  // Counted point-to-point, a pipeline's messages: buf[n] to or from rank
  // `peer` of this communicator, recorded with `peer` as the root; the sender
  // counts the bus bytes (crossing nodes when the peer is on another node),
  // the receiver the call and its payload.
  Handle send_counted(const void* buf, size_t n, DType t, int peer, int tag, Purpose purpose);
  Handle recv_counted(void* buf, size_t n, DType t, int peer, int tag, Purpose purpose);
  // Not counted: point-to-point messages move recovered state, outside any step.
  Handle send(const void* buf, size_t n, DType t, int peer, int tag) override {
    return inner_->send(buf, n, t, peer, tag);
  }
  Handle recv(void* buf, size_t n, DType t, int peer, int tag) override {
    return inner_->recv(buf, n, t, peer, tag);
  }
  void group_begin() override { inner_->group_begin(); }
  void group_end() override { inner_->group_end(); }
  void barrier() override { inner_->barrier(); }
  void annotate(Phase phase, int micro) override {
    root_->phase_ = phase;
    root_->micro_ = micro;
    if (root_->on_annotate_) root_->on_annotate_(phase, micro);
  }
  // Also tells `f` of every annotate() (the peer watch follows the engine's phases).
  void on_annotate(std::function<void(Phase, int)> f) { on_annotate_ = std::move(f); }
  // ZeRO's announcement holds for the data-parallel calls that follow. A
  // tensor or pipeline group's calls move activations; an announcement on
  // such a group holds for its next call only (the gradient norm's sum).
  void purpose(Purpose p) override {
    if (dimension_ == Dimension::Data) root_->purpose_ = p;
    else next_purpose_ = p;
  }
  [[noreturn]] void abort(const std::string& why) override {
    inner_->abort(why);
    std::_Exit(1);  // unreachable: every communicator's abort ends the process
  }

  const CommStats& stats() const { return stats_; }
  // One JSON line per collective into this file (rank-local); the lines held
  // since hold_trace() come first.
  void open_trace(const std::string& path);
  // Keeps the trace's lines in memory until open_trace: the calls issued before
  // the run directory may be written (DeepSpeed's start-up, the checkpoint load)
  // still reach the trace.
  void hold_trace() { holding_trace_ = true; }
  void set_nodes(const NodeMap& nodes) { nodes_ = nodes; }
  const NodeMap& nodes() const { return nodes_; }
  // Keeps every collective in memory too (tests compare it with the plan).
  void keep_log() { keep_log_ = true; }
  const std::vector<CallRecord>& log() const { return log_; }
  void set_step(int64_t step) { step_ = step; }

 private:
  Handle record(Primitive p, size_t count, DType t, int root, Handle h);
  Handle account(Primitive p, size_t count, DType t, int root, Purpose purpose, double across,
                 Handle h);
  CountingCommunicator(std::unique_ptr<Communicator> inner, CountingCommunicator* root,
                       const RankGroup& g, Dimension d);
  std::unique_ptr<Communicator> inner_;
  CountingCommunicator* root_ = this;  // where a sub-communicator's records go
  RankGroup group_;                    // its shape in the world
  Dimension dimension_ = Dimension::Data;
  int world_rank_ = 0;
  CommStats stats_;
  FILE* trace_ = nullptr;
  bool holding_trace_ = false;
  std::string held_trace_;
  int64_t step_ = 0;
  Phase phase_ = Phase::Step;
  int micro_ = 0;
  Purpose purpose_ = Purpose::Scalars;
  Purpose next_purpose_ = Purpose::Activations;  // a tensor or pipeline group's next call
  NodeMap nodes_;
  bool keep_log_ = false;
  std::function<void(Phase, int)> on_annotate_;
  std::vector<CallRecord> log_;
};

}  // namespace zt
