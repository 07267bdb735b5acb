#include "zero/schedule/stage012_schedule.h"

#include <algorithm>

#include "zero/schedule/bucketing.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

constexpr int64_t kStage0Bucket = 500000000;  // DeepSpeed's MEMORY_OPT_ALLREDUCE_SIZE

// Every rank keeps the whole sum (owner -1), in the replicated layout's order.
BucketSchedule stage0_buckets(const ParamTable& table) {
  BucketSchedule s;
  for (int p = 0; p < static_cast<int>(table.params().size()); p++) s.order.push_back(p);
  s.reduce_at.assign(s.order.size() + 1, {});
  for (const ClosedBucket& c :
       close_buckets(table, s.order, kStage0Bucket, BucketClose::AfterPassing)) {
    GradBucket b;
    b.params = c.params;
    for (int p : c.params) {
      const size_t numel = table.params()[p].numel;
      b.slices.push_back({p, 0, numel, -1, b.size});
      b.size += numel;
    }
    b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
    s.reduce_at[c.at].push_back(static_cast<int>(s.buckets.size()));
    s.buckets.push_back(std::move(b));
  }
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
  const ZeroConfig z = switches_in_effect(s.z);
  const DeepSpeedBehaviours ds = deepspeed_behaviours(z.deepspeed_version);
  Stage012Schedule out;
  out.stage = z.stage;
  out.wire = gradient_wire_dtype(z, model);
  out.path_row = &select_grad_path(z);
  if (z.stage == 0) {
    out.layout.reset(new FlatLayout(FlatLayout::replicated(table, s.groups)));
    out.grads = stage0_buckets(table);
    if (s.grad_clip > 0)
      out.step.push_back({StepCall::Norm, Primitive::AllReduce, 1, DType::F32, -1, 0,
                          "gradient norm (clip_grad_norm_ averages it over the ranks)"});
    out.when = "per step, at the accumulation boundary";
    out.bucket_rule =
        "model order; a bucket is reduced once it passes 5e8 elements "
        "(MEMORY_OPT_ALLREDUCE_SIZE; reduce_bucket_size plays no part)";
    return out;
  }
  out.layout.reset(
      new FlatLayout(z.native_reduce_scatter
                         ? FlatLayout::aligned(table, s.groups, world, z.reduce_bucket_size)
                         : FlatLayout::deepspeed(table, s.groups, world, z.round_robin_gradients)));
  out.path = make_grad_path(z, table, *out.layout);
  out.every_micro_step = z.stage == 2;
  out.during_backward = z.stage == 2 || z.overlap_comm;
  out.overlap = z.overlap_comm;
  std::vector<int> order;
  if (out.during_backward) {
    order = grad_ready_order(s.events);
  } else {
    for (const ParamGroup& g : s.groups)
      order.insert(order.end(), g.params.begin(), g.params.end());
  }
  out.grads = out.path->schedule(order);
  out.grads.buffers = zero_bucket_buffers(z.overlap_comm);
  const std::string bucket_size = std::to_string(z.reduce_bucket_size);
  out.when = z.stage == 2          ? "per backward (every micro-step)"
             : out.during_backward ? "per step, in the last micro-step's backward"
                                   : "per step, at the accumulation boundary";
  out.bucket_rule =
      z.native_reduce_scatter
          ? "zerotrain's aligned chunks of the layout (multiples of W x 64 elements, at most "
            "reduce_bucket_size " +
                bucket_size + "), each reduced once all its tensors arrived"
          : std::string(out.during_backward ? "backward (arrival) order"
                                            : "the groups in forward order") +
                "; reduce_bucket_size " + bucket_size + ": " + kOverflowRule;
  if (ds.overflow_check(model, z))
    out.step.push_back(
        {StepCall::OverflowCheck, Primitive::AllReduce, 1, DType::U8, -1, 0,
         "overflow check (DeepSpeed " + ds.release.str() + ", " + dtype_name(model) + ")"});
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
  return out;
}

}  // namespace zt
