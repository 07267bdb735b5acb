#include "zero/analysis/step_time_model.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace zt {
namespace {

// Ring steps of one call (latency terms); an all-to-all's W - 1 exchanges.
int ring_steps(Primitive p, int world) {
  if (world <= 1) return 0;
  return p == Primitive::AllReduce ? 2 * (world - 1) : world - 1;
}

// One call over groups g (all groups at once) on link figures: latency per
// step, then the bytes that stay in a node at the intra-node bandwidth and,
// side by side, a node's link carrying its ranks' inter-node share.
double link_seconds(const LinkFigures& link, Primitive p, double bytes, const RankGroup& g,
                    const NodeMap& nodes) {
  const double share = nodes.group_inter_node_share(p, g);
  const double bus = bytes * bus_factor(p, g.size);
  double transfer = 0;
  // A ring's rank sends all its bus bytes to one neighbour; an all-to-all's
  // splits them over its peers.
  if (share < 1)
    transfer = bus * (p == Primitive::AllToAll ? 1 - share : 1.0) / link.intra_node_bytes_per_s;
  if (share > 0)
    transfer =
        std::max(transfer, nodes.ranks_per_node() * bus * share / link.inter_node_bytes_per_s);
  const double latency = share > 0 ? link.inter_latency_s : link.intra_latency_s;
  return ring_steps(p, g.size) * latency + transfer;
}

// Link figures that reproduce a world-wide curve: its largest size's time
// fixes the bandwidth of the part that gates it (the node link when any
// bytes cross, else the intra-node one), its smallest the latency per step.
LinkFigures fitted_link(const CallCurve& c, int world, const NodeMap& nodes) {
  LinkFigures f;
  const RankGroup g{world, 1};
  const double share = nodes.group_inter_node_share(c.primitive, g);
  const double bus = c.bytes.back() * bus_factor(c.primitive, world);
  const double steps = std::max(1, ring_steps(c.primitive, world));
  const double latency = c.seconds.front() / steps;
  const double transfer = std::max(1e-12, c.seconds.back() - steps * latency);
  if (share > 0) {
    f.inter_node_bytes_per_s = nodes.ranks_per_node() * bus * share / transfer;
    f.inter_latency_s = latency;
    f.intra_node_bytes_per_s = 1e15;  // beside the measured link: the curve cannot tell
  } else {
    f.intra_node_bytes_per_s = bus / transfer;
    f.intra_latency_s = latency;
    f.inter_node_bytes_per_s = f.intra_node_bytes_per_s;
  }
  return f;
}

// The compute of one pass, advancing at a constant rate, stalled by the calls
// it waits for. `anchor_f` of the pass was done at time `anchor_t`.
struct PassClock {
  double duration, anchor_t, anchor_f = 0;
  double time_at(double f) const {
    return anchor_t + (std::max(f, anchor_f) - anchor_f) * duration;
  }
  void wait_until(double f, double t) {  // the compute cannot pass f before t
    f = std::max(f, anchor_f);
    if (t > time_at(f)) {
      anchor_t = t;
      anchor_f = f;
    }
  }
  double end() const { return time_at(1.0); }
};

const CallCurve& curve_of(const NetworkModel& net, const PlannedCall& c) {
  const CallCurve* best = nullptr;
  for (const CallCurve& k : net.curves)
    if (k.primitive == c.primitive && (!best || k.dtype == c.dtype)) best = &k;
  if (!best)
    throw std::runtime_error(net.source + ": no curve for " + primitive_name(c.primitive) +
                             " (measure it with commbench --primitives all)");
  return *best;
}

}  // namespace

double curve_seconds(const CallCurve& c, double bytes) {
  const std::vector<double>& x = c.bytes;
  const std::vector<double>& y = c.seconds;
  if (bytes <= x.front()) return y.front();
  if (bytes >= x.back()) return y.back() * bytes / x.back();
  const size_t i = std::upper_bound(x.begin(), x.end(), bytes) - x.begin();
  const double w = (bytes - x[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + w * (y[i] - y[i - 1]);
}

double NetworkModel::call_seconds(const PlannedCall& c, int world, const NodeMap& nodes) const {
  const RankGroup g = c.group.size > 0 ? c.group : RankGroup{world, 1};
  const double bytes = static_cast<double>(payload_bytes(c.primitive, c.count, c.dtype, g.size));
  if (g.size <= 1) return 0;
  if (!curves.empty()) {
    const CallCurve& k = curve_of(*this, c);
    if (g.size == world) return curve_seconds(k, bytes);
    return link_seconds(fitted_link(k, world, nodes), c.primitive, bytes, g, nodes);
  }
  if (c.primitive == Primitive::Reduce && g.size == world) {
    // Its algorithm's edges: the busiest link's bytes, and a latency per step.
    const LinkLoad load = call_link_load(c, world, nodes, link, reduce_algorithm);
    const bool crosses = nodes.nodes() > 1;
    return ring_steps(c.primitive, world) *
               (crosses ? link.inter_latency_s : link.intra_latency_s) +
           load.transfer_s;
  }
  return link_seconds(link, c.primitive, bytes, g, nodes);
}

LinkLoad NetworkModel::call_load(const PlannedCall& c, int world, const NodeMap& nodes) const {
  if (c.primitive != Primitive::Reduce) return LinkLoad{};
  if (curves.empty()) return call_link_load(c, world, nodes, link, reduce_algorithm);
  return call_link_load(c, world, nodes, fitted_link(curve_of(*this, c), world, nodes),
                        reduce_algorithm);
}

StepTimePrediction predict_step(const StepPlan& plan, int world, int micro_steps,
                                const NodeMap& nodes, const NetworkModel& net,
                                const ComputeTimes& compute) {
  StepTimePrediction out;
  const double fwd = compute.micro_step_s / 3, bwd = compute.micro_step_s * 2 / 3;
  double t = 0, last_end = 0;
  LinkClock links(link_count(nodes, world));
  // Offload: the end of each gradient call of the last micro-step, and its
  // elements, where the shard's copies to the host start.
  std::vector<std::pair<double, double>> final_grads;
  auto seconds = [&](const PlannedCall& c) {
    const double s = net.call_seconds(c, world, nodes);
    out.comm_s += s;
    out.comm_by_primitive_s[static_cast<int>(c.primitive)] += s;
    return s;
  };
  // Each pass's calls, in issue order, found in one walk over the step (a
  // walk per pass cost micro-steps x calls).
  std::vector<std::vector<const PlannedCall*>> pass_calls(2 * static_cast<size_t>(micro_steps));
  for (const PlannedCall& c : plan.steady_step)
    if (c.phase != Phase::Step && c.micro >= 0 && c.micro < micro_steps)
      pass_calls[2 * c.micro + (c.phase == Phase::Backward)].push_back(&c);
  // Loads of rooted calls, kept for the group being issued.
  std::vector<LinkLoad> loads;
  std::vector<std::pair<double, const LinkLoad*>> group;
  for (int m = 0; m < micro_steps; m++) {
    for (Phase phase : {Phase::Forward, Phase::Backward}) {
      PassClock clock{phase == Phase::Forward ? fwd : bwd, t};
      // Stage 2's alternating buckets: (place, end) of each bucket's calls.
      std::vector<std::pair<double, double>> buckets;
      size_t last_bucket_grads = final_grads.size();  // the last bucket's entries in final_grads
      const std::vector<const PlannedCall*>& calls = pass_calls[2 * m + (phase == Phase::Backward)];
      for (size_t i = 0; i < calls.size();) {
        const PlannedCall& c = *calls[i];
        if (c.purpose == Purpose::Parameters) {
          double d = seconds(c);
          if (plan.params_offloaded && net.host.known() && c.group.size == 0)
            d += static_cast<double>(c.count) * plan.dtype_bytes / net.host.pcie_bytes_per_s;
          const LinkLoad load = net.call_load(c, world, nodes);
          last_end = std::max(last_end, links.issue({{d, &load}}, t));
          clock.wait_until(c.at, last_end);
          i++;
          continue;
        }
        // One bucket's calls, issued together (the plan names them by bucket).
        size_t j = i;
        while (j < calls.size() && calls[j]->purpose == c.purpose && calls[j]->at == c.at &&
               calls[j]->what == c.what)
          j++;
        if (plan.double_buffered && buckets.size() >= 2)
          clock.wait_until(buckets[buckets.size() - 1].first, buckets[buckets.size() - 2].second);
        loads.clear();
        for (size_t k = i; k < j; k++) loads.push_back(net.call_load(*calls[k], world, nodes));
        group.clear();
        for (size_t k = i; k < j; k++) group.push_back({seconds(*calls[k]), &loads[k - i]});
        const double at = clock.time_at(c.at);
        // Open MPI progresses the bucket still in flight beside this one, so
        // it ends later than in issue order (the compute waits for it).
        if (plan.double_buffered && net.open_mpi && !buckets.empty()) {
          const double shared = links.shared_end(group, at);
          buckets.back().second = std::max(buckets.back().second, shared);
          for (size_t k = last_bucket_grads; k < final_grads.size(); k++)
            final_grads[k].first = std::max(final_grads[k].first, shared);
        }
        const double end = links.issue(group, at);
        last_end = std::max(last_end, end);
        last_bucket_grads = final_grads.size();
        if (c.purpose == Purpose::Gradients && m + 1 == micro_steps)
          for (size_t k = i; k < j; k++)
            final_grads.push_back({end, static_cast<double>(calls[k]->count)});
        if (plan.double_buffered) buckets.push_back({c.at, end});
        else if (!plan.overlap_comm) clock.wait_until(c.at, end);
        i = j;
      }
      t = clock.end();
      if (phase == Phase::Backward) t = std::max(t, last_end);
    }
  }
  const double compute_passes = micro_steps * compute.micro_step_s;
  const int sharded_over = plan.state_ranks > 0 ? plan.state_ranks : world;
  double optimizer = compute.optimizer_s * (plan.stage == 0 ? 1.0 : 1.0 / sharded_over);
  const OptimizerOffloadPlan& off = plan.optimizer_offload;
  if (off.device != "none" && net.host.known()) {
    const double shard = static_cast<double>(off.shard), es = plan.dtype_bytes;
    const double pcie = net.host.pcie_bytes_per_s;
    // The gradients' copies: each call's share of the shard, in proportion to
    // its elements, after the call, one copy at a time.
    double total = 0, copies = 0;
    for (const auto& g : final_grads) total += g.second;
    if (total > 0) {
      for (const auto& g : final_grads)
        copies = std::max(copies, g.first) + es * shard * g.second / total / pcie;
    } else {
      copies = t + es * shard / pcie;
    }
    // Chunks: the host AdamW (or the nvme reads and writes, 24 bytes per
    // element, where longer) of one overlaps the upload of the one before.
    const double k = std::max<double>(1, static_cast<double>(off.chunks));
    const double adamw = shard / net.host.adamw_elements_per_s;
    const double io = off.device == "nvme" && net.host.nvme_bytes_per_s > 0
                          ? 24 * shard / net.host.nvme_bytes_per_s
                          : 0;
    const double host = std::max(adamw, io) / k;
    const double up = plan.params_offloaded ? 0 : es * shard / pcie / k;
    optimizer = std::max(0.0, copies - t) + host + up + (k - 1) * std::max(host, up);
  }
  t += optimizer;
  for (const PlannedCall& c : plan.steady_step)
    if (c.phase == Phase::Step) t += seconds(c);
  out.compute_s = compute_passes + optimizer;
  out.optimizer_s = optimizer;
  out.step_s = t;
  out.exposed_s = t - out.compute_s;
  return out;
}

}  // namespace zt
