// In-memory snapshots during training (train.recovery: memory, or
// train.snapshot_every): after every N-th optimizer step a background thread
// copies the rank's optimizer state (fp32 master, m, v) and the step into its
// region of the node's store, while the next step's forward and backward run:
// they read parameters and write gradients, never that state. The main thread
// joins the copy before the optimizer step changes the state.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "model/tensor_split.h"
#include "train/io/snapshot_store.h"
#include "zero/optim/shard_optimizer.h"

namespace zt {

struct SnapshotSettings {
  std::string node_dir;  // STORE/<run>/<host> (snapshot_format.h)
  int every = 0;         // optimizer steps between snapshots
  uint32_t model_id = 0;
};

class Snapshotter {
 public:
  // Collective. Refuses (ConfigError, one line, every rank) a state the host
  // cannot read in place (the GPU backend, an offloaded optimizer) and a store
  // that does not fit this node's /dev/shm (statvfs); then each rank opens its
  // region, snapshots the state it starts from (step `start_step`) and drops
  // the region's older slot (a snapshot of an earlier launch, which may have
  // had another config, is never recovered into this run), and the node's
  // regions of ranks that no longer run there are removed. `part`: the rank's
  // part of the whole model on a grid (whole_runs; empty: the whole model),
  // into whose flat layout the snapshot's pieces are written.
  Snapshotter(const SnapshotSettings& s, const ShardOptimizer& opt,
              const std::vector<WholeRun>& part, int64_t start_step, int rank, int world);
  ~Snapshotter();

  // After optimizer step `steps_done`: starts the copy when it is due.
  void start_if_due(int64_t steps_done);
  // Before the optimizer step: waits for the copy in flight (rethrows its error).
  void join();
  // Measured at the last join, then reset: the copy's own time and how long
  // join() waited for it; both < 0 when no copy was joined.
  struct Measured {
    double copy_ms = -1, wait_ms = -1;
  };
  Measured take_measured();
  // At the end of a successful run: this rank's region goes (and the store's
  // directories once empty). A failed run keeps it: that is what --recover reads.
  void remove_region();

  int every() const { return settings_.every; }
  uint64_t region_bytes() const { return region_bytes_; }
  uint64_t node_bytes() const { return node_bytes_; }
  int node_ranks() const { return node_ranks_; }

 private:
  void copy(int64_t step);
  SnapshotSettings settings_;
  SnapshotSource source_;
  std::unique_ptr<SnapshotRegion> region_;
  int rank_ = 0, world_ = 1;
  uint64_t region_bytes_ = 0, node_bytes_ = 0;
  int node_ranks_ = 0;
  std::thread thread_;
  std::exception_ptr error_;
  double copy_ms_ = 0;  // written by the thread, read after join
  Measured measured_;
};

}  // namespace zt
