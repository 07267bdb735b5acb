#include "train/commands/recovery_report.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "zero/analysis/recovery_model.h"

namespace zt {
namespace {

std::string number(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

void print_survival(const ReplicaLayout& l) {
  if (l.shard_group == 1) std::printf("  replicas: stage 0, every rank holds the whole state");
  else
    std::printf(
        "  replicas: the state is sharded over %d ranks, so each piece is held by %d rank%s",
        l.shard_group, l.world / l.shard_group, l.world / l.shard_group == 1 ? "" : "s");
  std::printf("; %d node%s of %d rank%s\n", l.nodes(), l.nodes() == 1 ? "" : "s", l.ranks_per_node,
              l.ranks_per_node == 1 ? "" : "s");
  for (int k = 1; k <= std::min(3, l.nodes()); k++) {
    try {
      std::printf(
          "  %d node%s lost at once: %.1f%% of the possible sets leave every piece in memory "
          "(every set tried)\n",
          k, k == 1 ? "" : "s", 100 * recoverable_fraction(l, k));
    } catch (const std::runtime_error& e) {
      std::printf("  %d nodes lost at once: not tried (%s)\n", k, e.what());
    }
  }
}

}  // namespace

void print_recovery_report(const RecoveryReportInputs& in) {
  const ReplicaLayout l = replica_layout(*in.plan, in.world, in.ranks_per_node);
  std::printf(
      "\nrecovery model (model output, not a measurement; docs/recovery.md, \"The recovery "
      "model\"):\n");
  std::printf("  snapshot per rank: %llu bytes (fp32 master, m, v: 12 x %llu elements)\n",
              static_cast<unsigned long long>(l.snapshot_bytes()),
              static_cast<unsigned long long>(l.shard_elements));
  print_survival(l);
  if (!in.net || !in.step) {
    std::printf("  (times need --network FILE.json and --compute-ms or --compute-from)\n");
    return;
  }
  const NetworkModel& net = *in.net;
  RecoveryRates r;
  r.inter_node_bytes_per_s = net.link.inter_node_bytes_per_s;
  r.pcie_bytes_per_s = net.host.pcie_bytes_per_s;
  r.storage_bytes_per_s = net.host.nvme_bytes_per_s;
  r.snapshot_copy_bytes_per_s = net.host.pcie_bytes_per_s;
  RecoveryInputs t;
  // A dead process closes its connections: the watch sees it within about a
  // heartbeat (measured 11-65 ms on an emulated cluster, docs/recovery.md).
  t.detection_s = in.cfg->system.heartbeat_ms * 1e-3;
  t.relaunch_s = std::max(0.0, in.relaunch_s);
  t.step_s = in.step->step_s;
  t.forward_backward_s = in.compute_micro_step_s * in.micro_steps;
  const RecoveryPrediction p = predict_recovery(l, r, t);
  std::printf("  network: %s\n", net.source.c_str());
  std::printf(
      "  inputs: step %.3f s (the step-time model's), detection %.3f s (a dead process: about a "
      "heartbeat; a hang or a cut link: system.failure_timeout_s = %.3g s more), relaunch %s\n",
      t.step_s, t.detection_s, in.cfg->system.failure_timeout_s,
      in.relaunch_s < 0 ? "not counted (give --relaunch-s S)"
                        : number("%.3g s (given)", in.relaunch_s).c_str());
  std::printf(
      "  rates: node link %.3g GB/s in, PCIe %s, checkpoint reads %s per rank\n",
      r.inter_node_bytes_per_s / 1e9,
      r.pcie_bytes_per_s > 0 ? number("%.3g GB/s", r.pcie_bytes_per_s / 1e9).c_str()
                             : "none (the state lives on the host)",
      r.storage_bytes_per_s > 0
          ? number("%.3g GB/s (the network file's NVMe rate)", r.storage_bytes_per_s / 1e9).c_str()
          : "not given (no host.nvme_GBps)");
  std::printf(
      "  snapshot: copy %.3f s per rank per snapshot, %.3f s of it not hidden by forward and "
      "backward; store %llu bytes per node (two slots per rank)\n",
      p.copy_s, p.exposed_copy_s, static_cast<unsigned long long>(p.store_bytes_per_node));
  std::printf("  %-34s %10s %10s %10s %12s %10s\n", "one node lost, back from", "restore s",
              "lost s", "total s", "steps lost", "");
  std::printf("  %-34s %10.3f %10.3f %10.3f %12.2f\n", "memory (replicas, own store)", p.restore_s,
              p.lost_work_s, p.total_s, p.lost_work_s / t.step_s);
  for (int every : {10, 100}) {
    t.checkpoint_every = every;
    const RecoveryPrediction d = predict_recovery(l, r, t);
    std::printf("  %-34s %10.3f %10.3f %10.3f %12.2f\n",
                ("disk, checkpoint_every " + std::to_string(every)).c_str(), d.disk_restore_s,
                d.disk_lost_work_s, d.disk_total_s, d.disk_lost_work_s / t.step_s);
  }
  std::printf(
      "  (lost = the expected work redone: half a step in flight, plus the step before while "
      "its snapshot is still being copied; disk: checkpoint_every / 2 steps; total adds "
      "detection and relaunch)\n");
}

}  // namespace zt
