#include "zero/stage012_schedule.h"

#include <algorithm>

namespace zt {
namespace {

constexpr int64_t kStage0Bucket = 500000000;  // DeepSpeed's MEMORY_OPT_ALLREDUCE_SIZE

// engine.allreduce_no_retain: tensors join the bucket first; it is reduced once
// its elements pass the limit.
BucketSchedule stage0_buckets(const ParamTable& table) {
  BucketSchedule s;
  const int n = static_cast<int>(table.params().size());
  s.reduce_at.assign(n + 1, {});
  GradBucket open;
  auto close = [&](int at) {
    open.calls.push_back({Primitive::AllReduce, 0, open.size, -1});
    s.reduce_at[at].push_back(static_cast<int>(s.buckets.size()));
    s.buckets.push_back(std::move(open));
    open = GradBucket();
  };
  for (int p = 0; p < n; p++) {
    s.order.push_back(p);
    const size_t numel = table.params()[p].numel;
    open.params.push_back(p);
    open.slices.push_back({p, 0, numel, 0, open.size});
    open.size += numel;
    if (open.size > static_cast<size_t>(kStage0Bucket)) close(p + 1);
  }
  if (!open.params.empty()) close(n);
  return s;
}

}  // namespace

std::vector<size_t> legacy_allgather_chunks(size_t partition, int world, int64_t bucket_size) {
  const size_t shards = std::max<size_t>(
      1, partition * world / static_cast<size_t>(std::max<int64_t>(1, bucket_size)));
  size_t shard = partition / shards;
  shard -= shard % 2;  // nccl_start_alignment_factor
  std::vector<size_t> out(shards, shard);
  out.back() = partition - (shards - 1) * shard;
  return out;
}

Stage012Schedule make_stage012_schedule(const ZeroSetup& s, const ParamTable& table, int world,
                                        DType model) {
  const ZeroConfig& z = s.z;
  Stage012Schedule out;
  out.stage = z.stage;
  out.wire = gradient_wire_dtype(z, model);
  if (z.stage == 0) {
    out.layout.reset(new FlatLayout(FlatLayout::replicated(table, s.groups)));
    out.grads = stage0_buckets(table);
    if (s.grad_clip > 0)
      out.step.push_back({StepCall::Norm, Primitive::AllReduce, 1, DType::F32, -1, 0,
                          "gradient norm (clip_grad_norm_ averages it over the ranks)"});
    out.key = "allreduce";
    out.describe = "all-reduce at the accumulation boundary, buckets of 5e8 elements";
    out.chosen_by = "stage 0 (DeepSpeed's engine all-reduces; reduce_bucket_size plays no part)";
    return out;
  }
  out.layout.reset(
      new FlatLayout(z.native_reduce_scatter
                         ? FlatLayout::aligned(table, s.groups, world, z.reduce_bucket_size)
                         : FlatLayout::deepspeed(table, s.groups, world, z.round_robin_gradients)));
  out.path = make_grad_path(z, table, *out.layout);
  out.every_micro_step = z.stage == 2;
  out.during_backward = z.stage == 2 || z.overlap_comm;
  std::vector<int> order;
  if (out.during_backward) {
    order = grad_ready_order(s.events);
  } else {
    for (const ParamGroup& g : s.groups)
      order.insert(order.end(), g.params.begin(), g.params.end());
  }
  out.grads = out.path->schedule(order);
  for (size_t g = 0; g < s.groups.size(); g++)
    out.step.push_back({StepCall::Norm, Primitive::AllReduce, 1, DType::F32, static_cast<int>(g), 0,
                        "gradient norm, parameter group " + std::to_string(g)});
  // One rank owns every slice already: DeepSpeed's all_gather_dp_groups skips a
  // data-parallel group of size 1, so there is no parameter all-gather at W = 1.
  const Partition& part = out.layout->partition();
  for (size_t g = 0; world > 1 && g < part.groups().size(); g++) {
    const size_t slice = part.groups()[g].size() / world;
    const std::string what = "parameters, partition group " + std::to_string(g);
    if (!z.allgather_bucketed) {
      out.step.push_back({StepCall::ParamGather, Primitive::AllGather, slice, model,
                          static_cast<int>(g), 0, what});
      continue;
    }
    size_t offset = 0;
    for (size_t c : legacy_allgather_chunks(slice, world, z.allgather_bucket_size)) {
      out.step.push_back({StepCall::ParamGather, Primitive::AllGather, c, model,
                          static_cast<int>(g), offset, what + " (chunked)"});
      offset += c;
    }
  }
  out.key = out.path->key();
  out.describe = out.path->describe();
  out.chosen_by = out.path->chosen_by();
  return out;
}

}  // namespace zt
