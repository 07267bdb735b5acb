#include "train/loop/snapshotter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "train/config/config.h"
#include "train/io/checkpoint.h"
#include "train/io/checkpoint_format.h"
#include "train/io/host_identity.h"
#include "train/io/snapshot_recovery.h"
#include "train/loop/fault_stop.h"
#include "train/loop/runtime.h"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

Snapshotter::Snapshotter(const SnapshotSettings& s, const ShardOptimizer& opt,
                         const std::vector<WholeRun>& part, int64_t start_step, int rank, int world)
    : settings_(s), rank_(rank), world_(world) {
  std::string error;
  if (!opt.host_state(0))
    error =
        "train.snapshot_every: in-memory snapshots copy the optimizer state from host memory "
        "beside the next step, but this run keeps it " +
        std::string(opt.offloaded() ? "offloaded (zero.offload_optimizer)" : "on the GPU") +
        "; use system.device: cpu without zero.offload_optimizer, or train.recovery: none";
  for (const OptimPiece& p : whole_model_pieces(opt.pieces(), part)) {
    source_.pieces.push_back({p.flat_begin, p.n});
    source_.shard_offsets.push_back(p.shard_offset);
  }
  for (int k = 0; k < 3; k++) source_.state[k] = opt.host_state(k);
  const uint64_t slot = snapshot_slot_bytes(source_.pieces.size(), source_.elements());
  region_bytes_ = snapshot_region_bytes(slot);

  const std::vector<int> node = ranks_on_this_node(rank, world);
  const std::vector<uint64_t> sizes = allgather_u64({region_bytes_});
  node_ranks_ = static_cast<int>(node.size());
  for (int r : node) node_bytes_ += sizes[r];
  if (error.empty()) {
    if (const std::string problem = store_fit_problem(s.node_dir, node_bytes_); !problem.empty())
      error = "train.snapshot_every: the snapshot store of node " + host_name() + " (" +
              std::to_string(node_ranks_) + " ranks; rank " + std::to_string(rank) +
              "'s region: 2 slots of " + std::to_string(slot) + " bytes and a " +
              std::to_string(kSnapshotHeaderBytes) + "-byte header) " + problem;
  }
  error = first_error_over_ranks(error);
  if (!error.empty()) throw ConfigError(error);

  try {
    make_store_dirs(s.node_dir);
    region_ =
        SnapshotRegion::create(s.node_dir + "/" + snapshot_region_name(rank), slot, s.model_id);
    copy(start_step);
    region_->drop_unnamed_slot();
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = first_error_over_ranks(error);
  if (!error.empty()) throw JobError(error);
  // Every rank has its own region now: the node's lowest rank removes those of
  // ranks that no longer run here (a relaunch at another W, or elsewhere).
  barrier_all();
  if (rank == node.front())
    for (const auto& [r, path] : regions_in(s.node_dir))
      if (std::find(node.begin(), node.end(), r) == node.end()) std::remove(path.c_str());
  measured_ = Measured();
}

Snapshotter::~Snapshotter() {
  if (thread_.joinable()) thread_.join();
}

void Snapshotter::copy(int64_t step) {
  const auto t0 = Clock::now();
  const int slot = region_->write_slot(source_, step, world_, rank_,
                                       [step] { fault_stop_point(step, "snapshot_copy"); });
  region_->publish(slot, step);
  copy_ms_ = ms_since(t0);
}

void Snapshotter::start_if_due(int64_t steps_done) {
  if (settings_.every <= 0 || steps_done % settings_.every != 0) return;
  join();
  thread_ = std::thread([this, steps_done] {
    try {
      copy(steps_done);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

void Snapshotter::join() {
  if (!thread_.joinable()) return;
  const auto t0 = Clock::now();
  thread_.join();
  measured_ = {copy_ms_, ms_since(t0)};
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

Snapshotter::Measured Snapshotter::take_measured() { return std::exchange(measured_, Measured()); }

void Snapshotter::remove_region() {
  join();
  region_.reset();
  zt::remove_region(settings_.node_dir, rank_);
}

}  // namespace zt
