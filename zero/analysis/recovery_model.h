// The recovery model: what a node failure costs when the job comes back from
// the in-memory snapshots (docs/recovery.md), against coming back from a disk
// checkpoint, from the replica layout, a network's figures and a step time.
//
// Assumptions (each printed with the numbers):
// - State: a rank's snapshot is its optimizer-state shard, fp32 master, m and
//   v (12 bytes per element, as the disk checkpoint); model-dtype parameters
//   are re-derived from the master.
// - Replicas: ranks r and r' hold the same piece when r mod S = r' mod S, S
//   being the number of ranks that share one copy of the state (stage 0: 1,
//   every rank holds all of it; stages 1-3: W; MiCS: its shard size).
// - A lost node's state comes back over its own link: the distinct pieces
//   its ranks held cross it once (ranks of one node that held the same piece
//   share that copy), then each rank's shard crosses PCIe to its device where
//   the network file gives host figures. Surviving ranks read their own
//   node's store at the PCIe rate too (host memory to device).
// - Work lost: the step in flight (half a step on average), plus the step
//   before it when the failure falls inside the window in which that step's
//   snapshot is still being copied. The disk path loses the steps since the
//   newest checkpoint (checkpoint_every / 2 on average) and reads every
//   rank's shard at the storage rate.
// - Detection and relaunch are inputs: the watch's stated bound, and a
//   relaunch time measured on an emulated cluster or stated.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zero/analysis/plan.h"

namespace zt {

struct ReplicaLayout {
  int world = 1, ranks_per_node = 1;
  int shard_group = 1;          // ranks that share one copy of the state (see above)
  uint64_t shard_elements = 0;  // optimizer-state elements per rank
  int nodes() const { return world / ranks_per_node; }
  int piece_of(int rank) const { return rank % shard_group; }
  uint64_t snapshot_bytes() const { return 12 * shard_elements; }
};

// The configured step's layout: stage 0 replicates the whole state (S = 1);
// stages 1-3 shard it over plan.state_ranks (W, or MiCS's shard group).
ReplicaLayout replica_layout(const StepPlan& plan, int world, int ranks_per_node);

// Whether every piece keeps a holder when `lost_nodes` (node indices) are gone.
bool survives(const ReplicaLayout& l, const std::vector<int>& lost_nodes);
// The share of the C(nodes, k) sets of k lost nodes after which every piece
// survives (exact: every set is tried; k >= nodes gives 0).
double recoverable_fraction(const ReplicaLayout& l, int k);
// Bytes that must cross node `node`'s link to rebuild it: its distinct pieces.
uint64_t restore_bytes_into_node(const ReplicaLayout& l, int node);

struct RecoveryRates {
  double inter_node_bytes_per_s = 0;     // per node link, incoming
  double pcie_bytes_per_s = 0;           // host <-> device per rank (0: state lives on the host)
  double storage_bytes_per_s = 0;        // a rank's checkpoint read rate
  double snapshot_copy_bytes_per_s = 0;  // a rank's snapshot copy rate (device -> host store)
  std::string source;
};

struct RecoveryInputs {
  double detection_s = 0;         // failure to detection (the watch's bound)
  double relaunch_s = 0;          // detection to the relaunched job starting its restore
  double step_s = 0;              // one optimizer step
  double forward_backward_s = 0;  // the part of a step a snapshot copy can hide under
  int checkpoint_every = 0;       // the disk path's checkpoint interval (steps)
};

struct RecoveryPrediction {
  // From memory (replicas), one node lost.
  double restore_s = 0;    // the slowest rank's state back on its device
  double lost_work_s = 0;  // expected: half a step + the snapshot window's share
  double total_s = 0;      // detection + relaunch + restore + lost work
  // The snapshot's cost per step.
  double copy_s = 0;                  // one rank's copy
  double exposed_copy_s = 0;          // what forward and backward do not hide
  uint64_t store_bytes_per_node = 0;  // two slots per rank
  // From disk.
  double disk_restore_s = 0, disk_lost_work_s = 0, disk_total_s = 0;
};

RecoveryPrediction predict_recovery(const ReplicaLayout& l, const RecoveryRates& r,
                                    const RecoveryInputs& in);

}  // namespace zt
