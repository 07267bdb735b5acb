#include "train/loop/recovery.h"

#include <chrono>
#include <cstdio>

#include "data/shard.h"
#include "train/io/checkpoint.h"
#include "train/io/host_identity.h"
#include "train/io/run_outputs.h"
#include "train/io/snapshot_format.h"
#include "train/io/snapshot_recovery.h"
#include "train/loop/runtime.h"

namespace zt {
namespace {

std::string node_dir_of(const std::string& run_dir) {
  const std::string host = host_name();
  return snapshot_node_dir(snapshot_root(), run_dir, host.empty() ? "localhost" : host);
}

}  // namespace

int64_t recover_initial_state(const std::string& run_dir, const GPTConfig& model,
                              const std::vector<WholeRun>& part, const TokenizerIdentity& tokenizer,
                              ZeroEngine& engine, Communicator& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = comm.rank(), world = comm.world();
  auto seconds = [&] {
    // The slowest rank's time: the job continues when the last rank has its state.
    return -min_over_ranks(
        -std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  if (!engine.optimizer().host_state(0))
    throw ConfigError(
        "--recover: in-memory snapshots exist only for state in host memory (system.device: cpu "
        "without zero.offload_optimizer); use --resume to continue from a checkpoint");
  const std::string node_dir = node_dir_of(run_dir);
  // Ranks run up to a step ahead of rank 0's metrics record: a snapshot of a
  // step rank 0 never logged would leave that step's loss out of the log.
  const int64_t logged = static_cast<int64_t>(
      min_over_ranks(rank == 0 ? static_cast<double>(last_logged_step(run_dir)) : 1e18));
  const SnapshotRecovery mem = recover_from_snapshots(
      node_dir, model_id(model), ParamTable(model).total(), part, logged, engine, comm,
      [&](const std::string& why) {
        std::fprintf(stderr, "zerotrain: rank %d: --recover: rejected %s\n", rank, why.c_str());
        std::fflush(stderr);
      });
  if (mem.step >= 0) {
    const double s = seconds();
    if (rank == 0) {
      std::printf("recovered step %lld from in-memory snapshots in %.3f s (measured, %d ranks):\n",
                  static_cast<long long>(mem.step), s, world);
      for (int r = 0; r < world; r++) std::printf("  rank %d: %s\n", r, mem.origins[r].c_str());
      std::fflush(stdout);
    }
    return mem.step;
  }
  if (rank == 0) {
    std::printf(
        "--recover: no in-memory snapshots cover the state (%s, in the stores %s on each node); "
        "falling back to the newest disk checkpoint\n",
        mem.newest_seen.c_str(), node_dir.substr(0, node_dir.find_last_of('/')).c_str());
    std::fflush(stdout);
  }
  const ResumePoint disk =
      resume_from_checkpoint(run_dir, model, part, tokenizer, engine, [&](const std::string& why) {
        if (rank != 0) return;
        std::fprintf(stderr, "zerotrain: --recover: rejected %s\n", why.c_str());
        std::fflush(stderr);
      });
  if (disk.dir.empty())
    throw DataError("--recover: nothing to recover: no in-memory snapshots cover the state and " +
                    run_dir +
                    "/checkpoints holds no complete checkpoint (without --recover the run starts "
                    "fresh)");
  const double s = seconds();
  if (rank == 0) {
    std::printf(
        "recovered step %lld from disk checkpoint %s in %.3f s (measured; saved by %d ranks at "
        "stage %d): every rank's state came from it\n",
        static_cast<long long>(disk.meta.step), disk.dir.c_str(), s, disk.meta.world,
        disk.meta.stage);
    std::fflush(stdout);
  }
  return disk.meta.step;
}

std::unique_ptr<Snapshotter> start_snapshots(const std::string& run_dir, const Config& cfg,
                                             const std::vector<WholeRun>& part, ZeroEngine& engine,
                                             int64_t start_step, int rank, int world) {
  const int every = snapshot_interval(cfg.train);
  if (every <= 0) return nullptr;
  std::unique_ptr<Snapshotter> s(new Snapshotter({node_dir_of(run_dir), every, model_id(cfg.model)},
                                                 engine.optimizer(), part, start_step, rank,
                                                 world));
  if (rank == 0) {
    std::printf(
        "snapshots: every %d step%s into %s/ (rank 0's region %llu bytes: 2 slots of 12 bytes per "
        "owned element plus piece tables, and a 4096-byte header; %llu bytes for the %d ranks of "
        "its node); removed when the run ends successfully\n",
        every, every == 1 ? "" : "s", node_dir_of(run_dir).c_str(),
        static_cast<unsigned long long>(s->region_bytes()),
        static_cast<unsigned long long>(s->node_bytes()), s->node_ranks());
    std::fflush(stdout);
  }
  return s;
}

void record_snapshot_costs(Snapshotter& s, StepRecord& rec, SnapshotFigures& f) {
  f.every = s.every();
  f.region_bytes = s.region_bytes();
  f.node_bytes = s.node_bytes();
  f.node_ranks = s.node_ranks();
  const Snapshotter::Measured m = s.take_measured();
  if (m.copy_ms < 0) return;  // the same steps join on every rank
  rec.snapshot_copy_ms = -min_over_ranks(-m.copy_ms);
  rec.snapshot_wait_ms = -min_over_ranks(-m.wait_ms);
  f.copy_ms.push_back(rec.snapshot_copy_ms);
  f.wait_ms.push_back(rec.snapshot_wait_ms);
}

}  // namespace zt
