#include "zero/analysis/grid_step_time.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "zero/analysis/grid_memory.h"
#include "zero/deepspeed_release.h"
#include "zero/grid/pipeline_makespan.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

// AdamW's bytes per element of the rank's state: fp32 master, m, v and the
// gradient, each read and written.
constexpr double kAdamWBytesPerElement = 32;

NetworkModel link_model(const GridCluster& k) {
  NetworkModel net;
  net.link = k.link;
  return net;
}

Primitive primitive_of(GridCall call) {
  switch (call) {
    case GridCall::AllGather: return Primitive::AllGather;
    case GridCall::ReduceScatter: return Primitive::ReduceScatter;
    default: return Primitive::AllReduce;
  }
}

// A pass's time: its compute, its tensor all-reduces after one another, and
// the data-parallel calls it issues where they outlast its compute.
struct PassTimes {
  double compute_s = 0, tensor_s = 0, data_exposed_s = 0;
  double total() const { return compute_s + tensor_s + data_exposed_s; }
};

struct StageTimes {
  PassTimes forward, backward;
  double after_flush_data_s = 0;  // data-parallel calls after the flush, exposed
  double optimizer_s = 0;
  double tied_s = 0;                // the tied embedding's all-reduce (first and last stage)
  double after_flush_tensor_s = 0;  // the tensor group's step calls (the gradient norm's sum)
  double after_flush() const {
    return after_flush_data_s + optimizer_s + tied_s + after_flush_tensor_s;
  }
};

// One call over `group` (the tensor or the data-parallel group, `which`): from
// the measured curve of its primitive and dtype where the cluster has curves
// of that group, else by the link rule.
double group_call_seconds(const GridCluster& k, const std::vector<CallCurve>& curves,
                          const char* which, Primitive p, DType t, uint64_t count,
                          const RankGroup& group) {
  if (curves.empty()) return grid_call_seconds(k, p, t, count, group);
  const double payload = static_cast<double>(payload_bytes(p, count, t, group.size));
  for (const CallCurve& c : curves)
    if (c.primitive == p && c.dtype == t) return curve_seconds(c, payload);
  throw std::invalid_argument(std::string(which) + " curves: no " + primitive_name(p) + " " +
                              dtype_name(t) + " curve (measure it with commbench --primitives " +
                              primitive_name(p) + " --dtype " + dtype_name(t) + ")");
}

// Forward and backward tensor time per micro-batch of `stage`: each term of
// tensor_volume timed per call; "forward:" terms gate the forward, "step:"
// terms run once after the flush, the rest (backward; recompute does not
// arise here) the backward.
void add_tensor_times(const GridShape& g, const GPTConfig& c, const GridCluster& k, DType t,
                      int stage, StageTimes& st) {
  const GridVolume v = tensor_volume(g, c, t, Recompute::None, stage);
  const RankGroup group = tensor_group(g, RankOrder::TensorInnermost);
  for (const VolumeTerm& t : v.terms) {
    if (t.calls == 0) continue;
    const Primitive p = primitive_of(t.call);
    const double per_call_bytes = t.payload_bytes / static_cast<double>(t.calls);
    const double whole = per_call_bytes / dtype_size(t.dtype);
    const uint64_t count = static_cast<uint64_t>(p == Primitive::AllReduce ? whole : whole / g.tp);
    const double call_s =
        group_call_seconds(k, k.tensor_curves, "tensor", p, t.dtype, count, group);
    if (t.what.rfind("step:", 0) == 0) {
      st.after_flush_tensor_s += static_cast<double>(t.calls) * call_s;
      continue;
    }
    const double seconds = static_cast<double>(t.calls) / g.micro_batches * call_s;
    const bool forward = t.what.rfind("forward:", 0) == 0;
    (forward ? st.forward : st.backward).tensor_s += seconds;
  }
}

void add_data_times(const GridRun& r, const GPTConfig& c, const GridCluster& k, int stage,
                    StageTimes& st) {
  const GridShape& g = r.grid;
  const DType t = r.dtype;
  const uint64_t psi = stage_local_numel(g, c, stage);
  const uint64_t shard = psi / static_cast<uint64_t>(g.dp);
  const RankGroup group = data_group(g, RankOrder::TensorInnermost);
  auto call = [&](Primitive p, uint64_t count) {
    return group_call_seconds(k, k.data_curves, "data", p, t, count, group);
  };
  double all_gather = 0, gradients = 0;
  if (r.zero_stage > 0) {
    all_gather = call(Primitive::AllGather, shard);
    switch (r.gradient_reduce) {
      case Primitive::ReduceScatter: gradients = call(Primitive::ReduceScatter, shard); break;
      case Primitive::AllReduce: gradients = call(Primitive::AllReduce, psi); break;
      case Primitive::Reduce: gradients = g.dp * call(Primitive::Reduce, shard); break;
      default:
        throw std::invalid_argument(std::string("grid step time: gradients reduced by ") +
                                    primitive_name(r.gradient_reduce) +
                                    ": expected reduce_scatter, all_reduce or reduce");
    }
  }
  auto beyond = [](double comm, double compute) { return std::max(0.0, comm - compute); };
  switch (r.zero_stage) {
    case 0: st.after_flush_data_s = call(Primitive::AllReduce, psi); break;
    case 1: st.after_flush_data_s = beyond(gradients, st.backward.compute_s) + all_gather; break;
    case 2:
      st.backward.data_exposed_s = beyond(gradients, st.backward.compute_s);
      st.after_flush_data_s = all_gather;
      break;
    default:
      st.forward.data_exposed_s = beyond(all_gather, st.forward.compute_s);
      st.backward.data_exposed_s = beyond(all_gather + gradients, st.backward.compute_s);
      break;
  }
  const double state = r.zero_stage == 0 ? static_cast<double>(psi) : static_cast<double>(shard);
  st.optimizer_s = state * kAdamWBytesPerElement / k.memory_bytes_per_s;
}

// `steps` steps of `bytes` each way between the first and the last stage's
// ranks. Stage p holds ranks [p·D·T, (p+1)·D·T): the two ends are on
// different nodes when the world spans nodes, and then a stage's D·T ranks
// (at most a node's G) send across the node link at once.
double between_stages_seconds(const GridCluster& k, const GridShape& g, double bytes, int steps) {
  if (k.nodes > 1) {
    const int senders = std::min(k.gpus_per_node, g.dp * g.tp);
    return steps * (k.link.inter_latency_s + bytes * senders / k.link.inter_node_bytes_per_s);
  }
  return steps * (k.link.intra_latency_s + bytes / k.link.intra_node_bytes_per_s);
}

}  // namespace

double stage_flops_per_token(const GPTConfig& c, const GridShape& g, int stage) {
  const StageBlocks blocks = stage_blocks(c.n_layer, g.pp, stage);
  const double C = c.n_embd, S = g.seq, V = c.vocab_size;
  const double per_block = 72 * C * C + 12 * S * C;
  const double head = stage == g.pp - 1 ? 6 * V * C : 0;
  return (blocks.count * per_block + head) / g.tp;
}

double grid_call_seconds(const GridCluster& k, Primitive p, DType t, uint64_t count,
                         const RankGroup& group) {
  PlannedCall call{};
  call.primitive = p;
  call.dtype = t;
  call.count = static_cast<size_t>(count);
  call.root = p == Primitive::Reduce ? 0 : -1;  // a rooted reduce's root: the group's first
  call.group = group;
  const NodeMap nodes = NodeMap::uniform(k.world(), k.gpus_per_node);
  return link_model(k).call_seconds(call, k.world(), nodes);
}

double pipeline_message_seconds(const GridCluster& k, const GridShape& g, double bytes,
                                int boundary) {
  // Rank i of stage p sends to rank i of stage p + 1, D·T ranks further; the
  // pairs on different nodes share their sending node's link.
  const int DT = g.dp * g.tp, G = k.gpus_per_node;
  std::vector<int> across(static_cast<size_t>(k.nodes), 0);
  for (int i = 0; i < DT; i++) {
    const int from = boundary * DT + i, to = from + DT;
    if (from / G != to / G) across[static_cast<size_t>(from / G)]++;
  }
  const int senders = *std::max_element(across.begin(), across.end());
  if (senders > 0) return k.link.inter_latency_s + bytes * senders / k.link.inter_node_bytes_per_s;
  return k.link.intra_latency_s + bytes / k.link.intra_node_bytes_per_s;
}

GridStepPrediction predict_grid_step(const GPTConfig& c, const GridRun& r, const GridCluster& k) {
  const GridShape& g = r.grid;
  check_grid(g, c);
  if (g.world() != k.world())
    throw std::invalid_argument("grid: D x T x P = " + std::to_string(g.world()) +
                                " is not the cluster's " + std::to_string(k.world()) + " GPUs");
  if (r.zero_stage < 0 || r.zero_stage > 3)
    throw std::invalid_argument("zero.stage: " + std::to_string(r.zero_stage) + " must be 0-3");
  const int m = g.micro_batches;
  std::vector<StageTimes> stages(g.pp);
  double memory = 0;
  for (int s = 0; s < g.pp; s++) {
    StageTimes& st = stages[s];
    const double micro_s = stage_flops_per_token(c, g, s) * g.tokens() / k.flops_per_s;
    st.forward.compute_s = micro_s / 3;
    st.backward.compute_s = micro_s * 2 / 3;
    add_tensor_times(g, c, k, r.dtype, s, st);
    add_data_times(r, c, k, s, st);
    // The tied embedding's all-reduce over the first and last stage: a ring
    // of 2 ranks, 2 steps of half its bus bytes (bus = buffer x 2(2-1)/2).
    for (const VolumeTerm& t : pipeline_volume(g, c, r.dtype, s).terms)
      if (t.call == GridCall::AllReduce)
        st.tied_s += between_stages_seconds(k, g, t.bus_bytes / 2, 2);
    memory = std::max(memory, static_cast<double>(grid_model_states_bytes(r.zero_stage, g, c, s)) +
                                  stage_activation_bytes(r.schedule, g, c, s));
  }
  // Every stage runs at the slowest stage's pace; the critical stage is the
  // one whose micro-batch takes longest, the last one to finish after the
  // flush is the one with the most work left.
  double forward_s = 0, backward_s = 0;
  int critical = 0, last = 0;
  for (int s = 0; s < g.pp; s++) {
    forward_s = std::max(forward_s, stages[s].forward.total());
    backward_s = std::max(backward_s, stages[s].backward.total());
    const StageTimes& best = stages[critical];
    if (stages[s].forward.total() + stages[s].backward.total() >
        best.forward.total() + best.backward.total())
      critical = s;
    if (stages[s].after_flush() > stages[last].after_flush()) last = s;
  }
  const double message_bytes = static_cast<double>(g.tokens()) * c.n_embd * dtype_size(r.dtype);
  std::vector<double> message_s;
  for (int p = 0; p + 1 < g.pp; p++)
    message_s.push_back(pipeline_message_seconds(k, g, message_bytes, p));
  const double makespan =
      g.pp == 1 ? m * (forward_s + backward_s)
                : pipeline_makespan(r.schedule, g.pp, m, forward_s, backward_s, message_s);
  const double messages_s =
      makespan -
      (g.pp == 1 ? makespan : pipeline_makespan(r.schedule, g.pp, m, forward_s, backward_s, {}));

  const StageTimes& cs = stages[critical];
  const StageTimes& ls = stages[last];
  GridStepPrediction out;
  out.optimizer_s = ls.optimizer_s;
  out.compute_s = m * (cs.forward.compute_s + cs.backward.compute_s) + ls.optimizer_s;
  out.tensor_s = m * (cs.forward.tensor_s + cs.backward.tensor_s) + ls.after_flush_tensor_s;
  out.data_exposed_s =
      m * (cs.forward.data_exposed_s + cs.backward.data_exposed_s) + ls.after_flush_data_s;
  out.pipeline_s = messages_s + ls.tied_s;
  out.bubble_s = makespan - messages_s - m * (cs.forward.total() + cs.backward.total());
  out.step_s = makespan + ls.after_flush();
  out.tokens_per_s = static_cast<double>(g.dp) * m * g.tokens() / out.step_s;
  out.memory_bytes = memory;
  out.fits = memory <= k.device_memory_bytes;
  out.deepspeed_refuses =
      g.pp > 1 && !pipeline_engine_accepts_zero_stage(kNewestVerifiedRelease, r.zero_stage);
  return out;
}

}  // namespace zt
