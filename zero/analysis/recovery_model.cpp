#include "zero/analysis/recovery_model.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace zt {
namespace {

// The node sets whose loss takes a piece with it: for each piece, the nodes
// holding it (most layouts have one or a few distinct sets).
std::vector<std::vector<int>> holder_node_sets(const ReplicaLayout& l) {
  std::vector<std::set<int>> holders(l.shard_group);
  for (int r = 0; r < l.world; r++) holders[l.piece_of(r)].insert(r / l.ranks_per_node);
  std::set<std::vector<int>> distinct;
  for (const std::set<int>& h : holders) distinct.insert(std::vector<int>(h.begin(), h.end()));
  return {distinct.begin(), distinct.end()};
}

bool loses_a_piece(const std::vector<std::vector<int>>& holder_sets, const std::vector<int>& lost) {
  for (const std::vector<int>& h : holder_sets)
    if (std::all_of(h.begin(), h.end(),
                    [&](int n) { return std::find(lost.begin(), lost.end(), n) != lost.end(); }))
      return true;
  return false;
}

}  // namespace

ReplicaLayout replica_layout(const StepPlan& plan, int world, int ranks_per_node) {
  ReplicaLayout l;
  l.world = world;
  l.ranks_per_node = ranks_per_node;
  l.shard_group = plan.stage == 0 ? 1 : (plan.state_ranks > 0 ? plan.state_ranks : world);
  l.shard_elements = plan.optimizer_bytes / 12;
  return l;
}

bool survives(const ReplicaLayout& l, const std::vector<int>& lost_nodes) {
  return !loses_a_piece(holder_node_sets(l), lost_nodes);
}

double recoverable_fraction(const ReplicaLayout& l, int k) {
  const int n = l.nodes();
  if (k <= 0) return 1;
  if (k >= n) return 0;
  // Every k-subset, in lexicographic order; bounded so that a plan stays quick.
  double total = 1;
  for (int i = 0; i < k; i++) total = total * (n - i) / (i + 1);
  if (total > 2e6)
    throw std::runtime_error("recoverable_fraction: C(" + std::to_string(n) + ", " +
                             std::to_string(k) + ") node sets is too many to try");
  const std::vector<std::vector<int>> holders = holder_node_sets(l);
  std::vector<int> set(k);
  for (int i = 0; i < k; i++) set[i] = i;
  double ok = 0, tried = 0;
  while (true) {
    tried++;
    if (!loses_a_piece(holders, set)) ok++;
    int i = k - 1;
    while (i >= 0 && set[i] == n - k + i) i--;
    if (i < 0) break;
    set[i]++;
    for (int j = i + 1; j < k; j++) set[j] = set[j - 1] + 1;
  }
  return ok / tried;
}

uint64_t restore_bytes_into_node(const ReplicaLayout& l, int node) {
  std::set<int> pieces;
  for (int r = node * l.ranks_per_node; r < (node + 1) * l.ranks_per_node; r++)
    pieces.insert(l.piece_of(r));
  return pieces.size() * l.snapshot_bytes();
}

RecoveryPrediction predict_recovery(const ReplicaLayout& l, const RecoveryRates& r,
                                    const RecoveryInputs& in) {
  RecoveryPrediction p;
  const double bytes = static_cast<double>(l.snapshot_bytes());
  const double pcie_s = r.pcie_bytes_per_s > 0 ? bytes / r.pcie_bytes_per_s : 0;
  uint64_t worst_node_bytes = 0;
  for (int node = 0; node < l.nodes(); node++)
    worst_node_bytes = std::max(worst_node_bytes, restore_bytes_into_node(l, node));
  const double link_s =
      r.inter_node_bytes_per_s > 0 ? worst_node_bytes / r.inter_node_bytes_per_s : 0;
  p.restore_s = link_s + pcie_s;
  p.copy_s = r.snapshot_copy_bytes_per_s > 0 ? bytes / r.snapshot_copy_bytes_per_s : pcie_s;
  p.exposed_copy_s = std::max(0.0, p.copy_s - in.forward_backward_s);
  p.lost_work_s = 0.5 * in.step_s + std::min(p.copy_s, in.step_s);
  p.total_s = in.detection_s + in.relaunch_s + p.restore_s + p.lost_work_s;
  p.store_bytes_per_node = 2 * l.snapshot_bytes() * static_cast<uint64_t>(l.ranks_per_node);
  p.disk_restore_s = (r.storage_bytes_per_s > 0 ? bytes / r.storage_bytes_per_s : 0) + pcie_s;
  p.disk_lost_work_s = 0.5 * in.checkpoint_every * in.step_s;
  p.disk_total_s = in.detection_s + in.relaunch_s + p.disk_restore_s + p.disk_lost_work_s;
  return p;
}

}  // namespace zt
