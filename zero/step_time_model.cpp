#include "zero/step_time_model.h"

#include <algorithm>
#include <stdexcept>

namespace zt {
namespace {

double curve_seconds(const CallCurve& c, double bytes) {
  const std::vector<double>& x = c.bytes;
  const std::vector<double>& y = c.seconds;
  if (bytes <= x.front()) return y.front();
  if (bytes >= x.back()) return y.back() * bytes / x.back();
  const size_t i = std::upper_bound(x.begin(), x.end(), bytes) - x.begin();
  const double w = (bytes - x[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + w * (y[i] - y[i - 1]);
}

// Ring steps of one call (latency terms).
int ring_steps(Primitive p, int world) {
  if (world <= 1) return 0;
  return p == Primitive::AllReduce ? 2 * (world - 1) : world - 1;
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

}  // namespace

double NetworkModel::call_seconds(const PlannedCall& c, int world, const NodeMap& nodes) const {
  const double bytes = static_cast<double>(payload_bytes(c.primitive, c.count, c.dtype, world));
  if (world <= 1) return 0;
  if (!curves.empty()) {
    const CallCurve* best = nullptr;
    for (const CallCurve& k : curves)
      if (k.primitive == c.primitive && (!best || k.dtype == c.dtype)) best = &k;
    if (!best)
      throw std::runtime_error(source + ": no curve for " + primitive_name(c.primitive) +
                               " (measure it with commbench --primitives all)");
    return curve_seconds(*best, bytes);
  }
  int across = 0;
  for (int r = 0; r < world; r++) across += nodes.sends_across(r);
  // Every rank sends its bus bytes to the next; the links work side by side,
  // so the slowest gates the call: a node's link carries all its senders' bytes.
  const double bus = bytes * bus_factor(c.primitive, world);
  double transfer = 0;
  if (across < world) transfer = bus / link.intra_node_bytes_per_s;
  if (across > 0)
    transfer = std::max(
        transfer, nodes.ranks_per_node() * (bus * across / world) / link.inter_node_bytes_per_s);
  const double latency = across > 0 ? link.inter_latency_s : link.intra_latency_s;
  const double t = ring_steps(c.primitive, world) * latency;
  return t + transfer;
}

StepTimePrediction predict_step(const StepPlan& plan, int world, int micro_steps,
                                const NodeMap& nodes, const NetworkModel& net,
                                const ComputeTimes& compute) {
  StepTimePrediction out;
  const double fwd = compute.micro_step_s / 3, bwd = compute.micro_step_s * 2 / 3;
  double t = 0, channel = 0;
  auto seconds = [&](const PlannedCall& c) {
    const double s = net.call_seconds(c, world, nodes);
    out.comm_s += s;
    out.comm_by_primitive_s[static_cast<int>(c.primitive)] += s;
    return s;
  };
  for (int m = 0; m < micro_steps; m++) {
    for (Phase phase : {Phase::Forward, Phase::Backward}) {
      PassClock clock{phase == Phase::Forward ? fwd : bwd, t};
      // Stage 2's alternating buckets: (place, end) of each bucket's calls.
      std::vector<std::pair<double, double>> groups;
      for (const PlannedCall& c : plan.steady_step) {
        if (c.phase != phase || c.micro != m) continue;
        const double d = seconds(c);
        if (c.purpose == Purpose::Parameters) {
          const double start = std::max(channel, t);
          channel = start + d;
          clock.wait_until(c.at, channel);
          continue;
        }
        if (plan.double_buffered) {
          if (groups.empty() || groups.back().first != c.at) {
            if (groups.size() >= 2)
              clock.wait_until(groups[groups.size() - 1].first, groups[groups.size() - 2].second);
            groups.push_back({c.at, 0});
          }
        }
        const double start = std::max(channel, clock.time_at(c.at));
        channel = start + d;
        if (plan.double_buffered) groups.back().second = channel;
        else if (!plan.overlap_comm) clock.wait_until(c.at, channel);
      }
      t = clock.end();
      if (phase == Phase::Backward) t = std::max(t, channel);
    }
  }
  const double compute_passes = micro_steps * compute.micro_step_s;
  const double optimizer = compute.optimizer_s * (plan.stage == 0 ? 1.0 : 1.0 / world);
  t += optimizer;
  for (const PlannedCall& c : plan.steady_step)
    if (c.phase == Phase::Step) t += seconds(c);
  out.compute_s = compute_passes + optimizer;
  out.step_s = t;
  out.exposed_s = t - out.compute_s;
  return out;
}

}  // namespace zt
