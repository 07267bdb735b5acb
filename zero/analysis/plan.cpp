#include "zero/analysis/plan.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/compute_places.h"
#include "zero/analysis/memory_formula.h"
#include "zero/comm/quantized_blocks.h"
#include "zero/comm/quantized_reduce.h"
#include "zero/schedule/param_gatherer.h"
#include "zero/schedule/stage012_schedule.h"
#include "zero/schedule/stage3_schedule.h"

namespace zt {
namespace {

// A qgZ call stands for its four all-to-alls (on L ranks per node); the
// others run over `group` (size 0: the world).
void add_bucket_calls(const BucketSchedule& g, const std::vector<int>& buckets, Phase phase,
                      int micro, DType wire, double at, std::vector<PlannedCall>& out, int W = 1,
                      int ranks_per_node = 1, RankGroup group = {0, 1}) {
  for (int b : buckets)
    for (const BucketCall& c : g.buckets[b].calls) {
      const std::string what = "gradients, bucket " + std::to_string(b);
      if (c.primitive != Primitive::AllToAll) {
        out.push_back({phase, micro, Purpose::Gradients, c.primitive, wire, c.count, c.root, what,
                       at, group});
        continue;
      }
      const QgzShape q{c.count * W, ranks_per_node, W / ranks_per_node, c.quant_groups};
      for (const QgzCall& a : qgz_calls(q))
        out.push_back({phase, micro, Purpose::Gradients, Primitive::AllToAll, a.dtype, a.count, -1,
                       what + ", " + a.what, at, a.group, a.dtype == DType::F32});
    }
}

// reduce_at[i]'s place in the backward: where the compute is when the i-th
// gradient arrives (model/compute_places.h); 1 for the flush after the last.
std::vector<double> arrival_places(const std::vector<ModuleEvent>& events,
                                   const ParamTable& table) {
  const ComputePlaces places = compute_places(table, events);
  std::vector<double> at;
  for (size_t i = 0; i < events.size(); i++)
    if (events[i].kind == ModuleEvent::GradReady) at.push_back(places.done_before[i]);
  at.push_back(1.0);
  return at;
}

std::vector<PlannedCall> stage012_step(const Stage012Schedule& s, const ParamTable& table,
                                       const std::vector<ModuleEvent>& events, int A) {
  const std::vector<double> at = arrival_places(events, table);
  if (at.size() != s.grads.reduce_at.size())
    throw std::logic_error("plan: " + std::to_string(at.size() - 1) + " gradients arrive, " +
                           std::to_string(s.grads.order.size()) + " scheduled");
  std::vector<PlannedCall> out;
  for (int m = 0; m < A; m++) {
    if (!s.every_micro_step && m + 1 < A) continue;
    for (size_t i = 0; i < s.grads.reduce_at.size(); i++)
      add_bucket_calls(s.grads, s.grads.reduce_at[i], Phase::Backward, m, s.wire,
                       s.during_backward ? at[i] : 1.0, out);
  }
  for (const StepCall& c : s.step)
    out.push_back({Phase::Step, A - 1,
                   c.kind == StepCall::ParamGather ? Purpose::Parameters : Purpose::Scalars,
                   c.primitive, c.dtype, c.count, -1, c.what});
  return out;
}

// The gatherer's backend for planning: records each call, moves nothing, and
// tracks what is gathered for the live peak.
class RecordingBackend : public GatherBackend {
 public:
  RecordingBackend(const ParamTable& t, const Stage3Layout& l, const MicsGroups& mics, DType dtype,
                   bool quantized)
      : table_(t), layout_(l), mics_(mics), dtype_(dtype), quantized_(quantized), live_(t, l) {}
  void gather(const std::vector<int>& params, GatherFrom from) override {
    const bool from_secondary = from == GatherFrom::Secondary;
    size_t per_rank = 0;
    for (int p : params) {
      per_rank += from_secondary ? layout_.secondary_piece(p) : layout_.piece(p);
      call_of_[p] = next_;
    }
    members_[next_++] = params;
    std::string what = "parameters";
    for (size_t k = 0; k < params.size() && k < 3; k++)
      what += " " + table_.params()[params[k]].name;
    if (params.size() > 3) what += " (+" + std::to_string(params.size() - 3) + " more)";
    if (from_secondary) what += ", hpZ secondary";
    const RankGroup group = from_secondary ? layout_.hpz_group() : mics_.shard;
    std::vector<size_t>& at = index_of_[next_ - 1];
    // A group of one issues no call (the engine's backend copies; DeepSpeed's
    // _no_gather_coalesced).
    if ((from_secondary ? layout_.hpz_group().size : layout_.world()) == 1) return;
    if (quantized_ && qwz_quantizes(from)) {
      const QuantizedGatherShape q = qwz_shape(per_rank);
      at.push_back(out->size());
      out->push_back({phase, micro, Purpose::Parameters, Primitive::AllGather, DType::I8, per_rank,
                      -1, what + ", int8 codes", position, group});
      at.push_back(out->size());
      out->push_back({phase, micro, Purpose::Parameters, Primitive::AllGather, DType::F32, q.blocks,
                      -1, what + ", scales (blocks of " + std::to_string(q.block) + ")", position,
                      group, true});
    } else if (from == GatherFrom::Primary && mics_.hierarchical) {
      const RankGroup across = mics_.inter_node;
      at.push_back(out->size());
      out->push_back({phase, micro, Purpose::Parameters, Primitive::AllGather, dtype_, per_rank, -1,
                      what + ", MiCS across nodes", position, across});
      at.push_back(out->size());
      out->push_back({phase, micro, Purpose::Parameters, Primitive::AllGather, dtype_,
                      per_rank * across.size, -1, what + ", MiCS inside the node", position,
                      mics_.intra_node});
    } else {
      at.push_back(out->size());
      out->push_back({phase, micro, Purpose::Parameters, Primitive::AllGather, dtype_, per_rank, -1,
                      what, position, group});
    }
  }
  void wait(int param) override {
    const int call = call_of_.at(param);
    for (size_t i : index_of_.at(call)) (*out)[i].at = position;  // needed here, whenever issued
    index_of_.erase(call);
    for (int p : members_[call]) {
      call_of_.erase(p);
      live_.gathered(p);
    }
    members_.erase(call);
  }
  void drop(int param, bool) override { live_.dropped(param); }
  void drop_secondaries() override {}
  std::vector<int64_t> broadcast_from_rank0(const std::vector<int64_t>& mine) override {
    out->push_back({phase, micro, Purpose::Scalars, Primitive::Broadcast, DType::I64, mine.size(),
                    0, "stage-3 trace check"});
    return mine;
  }
  std::vector<PlannedCall>* out = nullptr;
  Phase phase = Phase::Forward;
  int micro = 0;
  double position = 0;  // the share of the current pass's compute done
  uint64_t live_peak() const { return live_.peak(); }

 private:
  const ParamTable& table_;
  const Stage3Layout& layout_;
  const MicsGroups& mics_;
  DType dtype_;
  bool quantized_;
  std::map<int, int> call_of_;
  std::map<int, std::vector<int>> members_;
  std::map<int, std::vector<size_t>> index_of_;  // call -> its places in *out, until waited for
  LiveParams live_;
  int next_ = 0;
};

// Two steps of stage 3 through the engine's own gatherers and bucket schedule,
// micro-step by micro-step, or with a pipeline in its stage's action order.
void plan_stage3(const ZeroSetup& s, const ParamTable& table, int W, int A, DType model,
                 StepPlan& plan) {
  const Stage3Schedule sched(s, table, W, model);
  for (const StepCall& c : sched.before_norms)
    plan.overflow_check |= c.kind == StepCall::OverflowCheck;
  const Stage3Layout& layout = sched.layout;
  const BucketSchedule& grads = sched.grads;
  const DType wire = sched.wire;
  const RankGroup shard = sched.mics.shard;
  RecordingBackend rec(table, layout, sched.mics, model, s.z.zero_quantized_weights);
  const ComputePlaces places = compute_places(table, s.events);
  ParamStates st = released_param_states(table.params().size());
  st.secondary = started_secondaries(layout, table.params().size());
  ParamGatherer train(table, layout, s.z, st, rec), eval(table, layout, s.z, st, rec);
  for (std::vector<PlannedCall>* out : {&plan.first_step, &plan.steady_step}) {
    rec.out = out;
    // Micro-step m's events [begin, end) through gatherer g; `in_micro`: inside
    // ZeRO's micro-step (its backward, or its whole pass without a pipeline),
    // where gradients arrive and are reduced. A forward outside it (a
    // pipeline's) is a pass of its own, closed at the root's release.
    auto run_events = [&](int m, size_t begin, size_t end, ParamGatherer& g, bool in_micro) {
      rec.micro = m;
      // Each bucket's calls; in the last micro-step, MiCS's replica all-reduce after each.
      auto reduce = [&](const std::vector<int>& buckets, double at) {
        for (int b : buckets) {
          add_bucket_calls(grads, {b}, Phase::Backward, m, wire, at, *out, W, s.ranks_per_node,
                           shard);
          if (m + 1 < A || sched.replica_reduces.empty()) continue;
          out->push_back({Phase::Backward, m, Purpose::Gradients, Primitive::AllReduce, model,
                          sched.replica_reduces[b].count, -1,
                          "gradients, bucket " + std::to_string(b) + ", MiCS across replicas", at,
                          sched.mics.replica});
        }
      };
      size_t arrived = 0;
      for (size_t i = begin; i < end; i++) {
        const ModuleEvent& e = s.events[i];
        // A GradReady event's index is a parameter's, not a module's.
        const bool root = e.kind != ModuleEvent::GradReady && table.modules()[e.index].is_root();
        rec.position = places.done_before[i];
        if (e.kind == ModuleEvent::Fetch) {
          if (root) rec.phase = e.backward ? Phase::Backward : Phase::Forward;
          if (root && !e.backward && in_micro) g.start_forward();
          g.fetch(e.index, e.backward);
        } else if (e.kind == ModuleEvent::Release) {
          g.release(e.index, e.backward);
          if (root && e.backward) g.end_backward();
          if (root && !e.backward && !in_micro) g.end_pass();
        } else {
          reduce(grads.reduce_at[arrived++], rec.position);
        }
      }
      if (in_micro) reduce(grads.reduce_at[arrived], 1.0);
    };
    if (s.pipeline_actions.empty()) {
      for (int m = 0; m < A; m++) run_events(m, 0, s.events.size(), train, true);
    } else {
      size_t backward_begin = 0;
      while (backward_begin < s.events.size() &&
             !(s.events[backward_begin].kind == ModuleEvent::Fetch &&
               s.events[backward_begin].backward &&
               table.modules()[s.events[backward_begin].index].is_root()))
        backward_begin++;
      for (const PipeAction& a : s.pipeline_actions) {
        if (a.op == PipeOp::Forward) run_events(a.micro_batch, 0, backward_begin, eval, false);
        if (a.op == PipeOp::Backward)
          run_events(a.micro_batch, backward_begin, s.events.size(), train, true);
      }
    }
    rec.phase = Phase::Step;
    rec.position = 0;
    run_stage3_step(train, [&] {
      for (const StepCall& c : sched.before_norms)
        out->push_back({Phase::Step, A - 1, Purpose::Scalars, c.primitive, c.dtype, c.count, -1,
                        c.what, 0, shard});
      for (const StepCall& c : layout.norm_calls())
        out->push_back({Phase::Step, A - 1, Purpose::Scalars, c.primitive, c.dtype, c.count, -1,
                        c.what, 0, shard});
    });
  }
  const uint64_t es = dtype_size(model);
  plan.overlap_comm = sched.overlap;
  plan.double_buffered = grads.buffers > 1;
  plan.path = sched.path_row;
  plan.grads = grads;
  plan.when = sched.when;
  plan.bucket_rule = sched.bucket_rule;
  plan.persistent_tensors = layout.persistent_params().size();
  plan.padded_params = layout.shard_size() * layout.world();
  plan.hpz_secondary_bytes = es * layout.secondary_elems();
  plan.persistent_bytes = es * layout.persistent_elems();
  plan.live_params_peak_bytes = es * rec.live_peak();
}

}  // namespace

PrimitiveTotals totals(const std::vector<PlannedCall>& calls, int W, const NodeMap& nodes,
                       const Purpose* only) {
  PrimitiveTotals t{};
  for (const PlannedCall& c : calls) {
    if (only && c.purpose != *only) continue;
    PlannedPrimitive& x = t[static_cast<int>(c.primitive)];
    const RankGroup g = c.group.size > 0 ? c.group : RankGroup{W, 1};
    const uint64_t bytes = payload_bytes(c.primitive, c.count, c.dtype, g.size);
    const double bus = bytes * bus_factor(c.primitive, g.size);
    x.calls++;
    x.bytes += bytes;
    x.bus_bytes += bus;
    x.inter_node_bus_bytes += bus * nodes.group_inter_node_share(c.primitive, g);
  }
  return t;
}

StepPlan plan_step(const ZeroSetup& s, const ParamTable& table, int W, int A, DType model,
                   const NodeMap& nodes) {
  StepPlan plan;
  plan.stage = s.z.stage;
  if (s.z.stage == 3) {
    plan_stage3(s, table, W, A, model, plan);
  } else {
    Stage012Schedule sched = make_stage012_schedule(s, table, W, model);
    plan.steady_step = stage012_step(sched, table, s.events, A);
    for (const StepCall& c : sched.step) plan.overflow_check |= c.kind == StepCall::OverflowCheck;
    plan.overlap_comm = sched.overlap;
    plan.double_buffered = sched.grads.buffers > 1;
    plan.path = sched.path_row;
    plan.grads = std::move(sched.grads);  // a rooted reduce per rank: not copied
    plan.when = sched.when;
    plan.bucket_rule = sched.bucket_rule;
    if (s.z.stage > 0)
      for (const FlatRange& g : sched.layout->group_ranges())
        plan.group_buffer_elems.push_back(g.size());
    plan.padded_params = sched.layout->padded_total();
  }
  plan.startup = deepspeed_startup_calls(s, table, W, model);
  plan.state_ranks = shard_ranks(s.z, W);
  plan.placement = model_states_placement(s.z, plan.padded_params, W, model, plan.persistent_bytes);
  plan.dtype_bytes = static_cast<int>(dtype_size(model));
  plan.params_offloaded = s.z.stage == 3 && s.z.offload_param.enabled();
  plan.params_bytes = plan.placement.device.params;
  plan.grads_bytes = plan.placement.device.grads;
  plan.optimizer_bytes = plan.placement.device.optimizer;
  plan.optimizer_offload = plan_optimizer_offload(
      s.z, s.z.stage == 0 ? plan.padded_params : plan.padded_params / shard_ranks(s.z, W), model);
  plan.per_step = totals(plan.steady_step, W, nodes);
  plan.first = totals(plan.first_step_calls(), W, nodes);
  for (int u = 0; u < static_cast<int>(Purpose::kCount); u++) {
    const Purpose purpose = static_cast<Purpose>(u);
    plan.per_step_by_purpose[u] = totals(plan.steady_step, W, nodes, &purpose);
  }
  for (const PlannedPrimitive& p : plan.per_step_by_purpose[static_cast<int>(Purpose::Gradients)])
    plan.gradient_bus_bytes += static_cast<uint64_t>(p.bus_bytes);
  return plan;
}

}  // namespace zt
