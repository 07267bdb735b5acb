#include "zero/stage3_layout.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace zt {

Stage3Layout::Stage3Layout(const ParamTable& table, int world, const ZeroConfig& z)
    : world_(world) {
  const auto& params = table.params();
  tensors_.resize(params.size());
  for (size_t i = 0; i < params.size(); i++) {
    tensors_[i].persistent =
        static_cast<int64_t>(params[i].numel) <= z.stage3_param_persistence_threshold;
    tensors_[i].slice = Partition::pad(params[i].numel, world) / world;
    padded_total_ += tensors_[i].slice * world;
  }
  // Shard order: each unit's partitioned slices, unit by unit; then all persistent ones.
  size_t off = 0;
  for (const UnitRange& u : table.units()) {
    const size_t begin = off;
    uint64_t elems = 0;
    for (int p = u.first_param; p < u.first_param + u.n_params; p++)
      if (!tensors_[p].persistent) {
        tensors_[p].shard_offset = off;
        off += tensors_[p].slice;
        elems += params[p].numel;
      }
    unit_gather_.push_back({begin, off});
    unit_elems_.push_back(elems);
  }
  persistent_range_.begin = off;
  for (size_t p = 0; p < params.size(); p++)
    if (tensors_[p].persistent) {
      tensors_[p].shard_offset = off;
      tensors_[p].persistent_offset = persistent_elems_;
      off += tensors_[p].slice;
      persistent_elems_ += params[p].numel;
    }
  persistent_range_.end = off;

  // DeepSpeed's bucket rule over padded tensor sizes, in backward order.
  bucket_of_.assign(params.size(), -1);
  Stage3Bucket open;
  for (int p = static_cast<int>(params.size()) - 1; p >= 0; p--) {
    const size_t padded = tensors_[p].slice * world;
    if (!open.params.empty() &&
        (open.slice_total * world + padded) > static_cast<size_t>(z.reduce_bucket_size)) {
      buckets_.push_back(open);
      open = Stage3Bucket();
    }
    bucket_of_[p] = static_cast<int>(buckets_.size());
    open.params.push_back(p);
    open.slice_offset.push_back(open.slice_total);
    open.slice_total += tensors_[p].slice;
  }
  if (!open.params.empty()) buckets_.push_back(open);
}

std::vector<OptimPiece> Stage3Layout::pieces(const ParamTable& table, int rank) const {
  std::vector<OptimPiece> out;
  for (size_t p = 0; p < tensors_.size(); p++) {
    const ParamInfo& info = table.params()[p];
    const size_t begin = static_cast<size_t>(rank) * tensors_[p].slice;
    if (begin >= info.numel) continue;
    const size_t n = std::min(tensors_[p].slice, info.numel - begin);
    out.push_back({info.offset + begin, tensors_[p].shard_offset, n, info.decay});
  }
  std::sort(out.begin(), out.end(), [](const OptimPiece& a, const OptimPiece& b) {
    return a.shard_offset < b.shard_offset;
  });
  return out;
}

Stage3Schedule stage3_schedule(const std::vector<int>& trace, const Stage3Layout& layout,
                               const ZeroConfig& z) {
  const size_t n = trace.size();
  Stage3Schedule s;
  s.gather.assign(n, false);
  s.keep.assign(n, false);
  s.prefetch.assign(n, {});
  std::set<int> live;
  uint64_t live_elems = 0;
  auto elems = [&](int u) { return layout.unit_gathered_elems(u); };
  auto bring_in = [&](size_t pos) {
    s.gather[pos] = true;
    live.insert(trace[pos]);
    live_elems += elems(trace[pos]);
    s.live_peak_elems = std::max(s.live_peak_elems, live_elems);
  };
  for (size_t i = 0; i < n; i++) {
    const int u = trace[i];
    if (elems(u) == 0) continue;  // only persistent tensors: never gathered
    if (!live.count(u)) bring_in(i);
    if (z.overlap_comm) {
      uint64_t ahead = 0;
      for (size_t j = i + 1; j < n; j++) {
        const int v = trace[j];
        if (elems(v) == 0 || v == u) continue;
        ahead += elems(v);
        if (ahead > static_cast<uint64_t>(z.stage3_prefetch_bucket_size)) break;
        if (live.count(v)) continue;
        s.prefetch[i].push_back(static_cast<int>(j));
        bring_in(j);
      }
    }
    size_t next = i + 1;
    uint64_t distance = 0;
    while (next < n && trace[next] != u) distance += elems(trace[next++]);
    s.keep[i] = next < n && distance <= static_cast<uint64_t>(z.stage3_max_reuse_distance) &&
                live_elems <= static_cast<uint64_t>(z.stage3_max_live_parameters);
    if (!s.keep[i]) {
      live.erase(u);
      live_elems -= elems(u);
    }
  }
  return s;
}

StepPlan plan_stage3_step(const ZeroConfig& z, const ParamTable& table, int W, int A, DType t,
                          const std::vector<int>& trace) {
  const Stage3Layout layout(table, W, z);
  const Stage3Schedule steady = stage3_schedule(trace, layout, z);
  StepPlan plan;
  plan.stage = 3;
  plan.grad_path = z.reduce_scatter ? "reduce_scatter" : "allreduce";
  auto add = [&](std::array<PlannedPrimitive, static_cast<int>(Primitive::kCount)>& into,
                 Primitive p, size_t count, DType dt, uint64_t times) {
    PlannedPrimitive& x = into[static_cast<int>(p)];
    const uint64_t bytes = payload_bytes(p, count, dt, W);
    x.calls += times;
    x.bytes += bytes * times;
    x.bus_bytes += bytes * bus_factor(p, W) * times;
  };
  // One micro-step: unit gathers (tracing: every use gathers), then the gradient buckets.
  auto micro = [&](decltype(plan.per_step)& into, bool tracing, uint64_t times) {
    for (size_t i = 0; i < trace.size(); i++) {
      const int u = trace[i];
      if (layout.unit_gathered_elems(u) == 0 || !(tracing || steady.gather[i])) continue;
      add(into, Primitive::AllGather, layout.unit_gather_range(u).size(), t, times);
    }
    for (const Stage3Bucket& b : layout.buckets()) {
      if (z.reduce_scatter) add(into, Primitive::ReduceScatter, b.slice_total, t, times);
      else add(into, Primitive::AllReduce, b.slice_total * W, t, times);
    }
  };
  auto once_per_step = [&](decltype(plan.per_step)& into) {
    add(into, Primitive::AllReduce, 1, DType::F32, 1);  // gradient norm
    if (layout.persistent_range().size() > 0)
      add(into, Primitive::AllGather, layout.persistent_range().size(), t, 1);
  };
  micro(plan.per_step, false, static_cast<uint64_t>(A));
  once_per_step(plan.per_step);
  micro(plan.first_step, true, 1);
  micro(plan.first_step, false, static_cast<uint64_t>(A - 1));
  once_per_step(plan.first_step);
  for (const Stage3Bucket& b : layout.buckets()) {
    const Primitive p = z.reduce_scatter ? Primitive::ReduceScatter : Primitive::AllReduce;
    const size_t count = z.reduce_scatter ? b.slice_total : b.slice_total * W;
    plan.gradient_bus_bytes +=
        static_cast<uint64_t>(payload_bytes(p, count, t, W) * bus_factor(p, W)) * A;
  }
  const uint64_t es = dtype_size(t);
  plan.padded_params = layout.padded_total();
  plan.params_bytes = es * (layout.shard_size() + layout.persistent_elems());
  plan.grads_bytes = es * layout.shard_size();
  plan.optimizer_bytes = 12 * layout.shard_size();
  plan.persistent_bytes = es * layout.persistent_elems();
  plan.live_params_peak_bytes = es * steady.live_peak_elems;
  return plan;
}

}  // namespace zt
