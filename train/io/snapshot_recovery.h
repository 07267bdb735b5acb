// --recover from in-memory snapshots (train/io/snapshot_store.h), collective:
// each rank lists the snapshots that verify in its node's store (its own
// region, and regions of ranks that no longer run on this node), all ranks
// exchange what they hold (step and flat extents), and the newest step whose
// snapshots together cover every parameter is chosen. Each rank then builds
// the pieces it owns in the current layout (any W, any stage) by flat extent:
// from its node's store where it holds them, else from the rank that does,
// over the communicator. Replicas (stage 0, hybrid sharding, the data-parallel
// group of a tensor shard or pipeline stage) are what lets a lost region be
// rebuilt; nothing here knows which layout or grid made them: extents are in
// the whole model's flat layout.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor_split.h"
#include "zero/comm/communicator.h"
#include "zero/stages/engine.h"

namespace zt {

// The ranks on this node (same host name: emulated nodes differ only in it),
// ascending. Collective.
std::vector<int> ranks_on_this_node(int rank, int world);

struct SnapshotRecovery {
  int64_t step = -1;  // < 0: no set of snapshots covers the state (nothing was loaded)
  // Per current rank: where its state came from, e.g. "own store" or
  // "own store 60%, rank 2 over the communicator 40%" (the same on every rank).
  std::vector<std::string> origins;
  uint64_t bytes_received = 0;  // by this rank over the communicator
  std::string newest_seen;      // when nothing covers: what the stores held, for the message
};

// `total` is the whole model's parameter count and `part` this rank's part of
// it on a grid (whole_runs; empty: the whole model); regions of another model
// (model_id) are rejected; snapshots of steps after max_step are not used.
// Each snapshot that does not verify is passed to on_reject as one line
// naming its file and why.
SnapshotRecovery recover_from_snapshots(const std::string& node_dir, uint32_t model_id,
                                        uint64_t total, const std::vector<WholeRun>& part,
                                        int64_t max_step, ZeroEngine& engine, Communicator& comm,
                                        const std::function<void(const std::string&)>& on_reject);

}  // namespace zt
