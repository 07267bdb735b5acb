#include "zero/schedule/grad_path_registry.h"

#include <algorithm>
#include <stdexcept>

#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {

void apply_change(ZeroConfig& z, const SwitchChange& c) {
  const bool on = c.value == "true";
  if (c.key == "reduce_scatter") z.reduce_scatter = on;
  else if (c.key == "use_multi_rank_bucket_allreduce") z.use_multi_rank_bucket_allreduce = on;
  else if (c.key == "contiguous_gradients") z.contiguous_gradients = on;
  else if (c.key == "round_robin_gradients") z.round_robin_gradients = on;
  else if (c.key == "native_reduce_scatter") z.native_reduce_scatter = on;
  else if (c.key == "communication_data_type") z.communication_data_type = c.value;
  else throw std::logic_error("apply_change: unknown switch '" + c.key + "'");
}

const std::vector<GradPathRow>& grad_path_registry() {
  static const std::vector<GradPathRow> rows = {
      {"allreduce",
       0,
       0,
       {},
       0,
       [](const ZeroConfig&) { return true; },
       "all-reduce at the accumulation boundary, buckets of 5e8 elements",
       "stage 0 (DeepSpeed's engine all-reduces; reduce_bucket_size plays no part)",
       "engine.allreduce_gradients(bucket_size=MEMORY_OPT_ALLREDUCE_SIZE) -> "
       "buffered_allreduce_fallback -> allreduce_no_retain: one all-reduce per bucket of "
       "5e8 elements",
       "one all-reduce of the bucket (model order)",
       Primitive::AllReduce,
       true,
       true},
      {"allreduce_fallback",
       1,
       2,
       {{"contiguous_gradients", "false"}},
       1,
       [](const ZeroConfig& z) { return !z.contiguous_gradients; },
       "all-reduce of each bucket (buffered fallback, contiguous_gradients: false)",
       "contiguous_gradients: false (checked first, whatever reduce_scatter says)",
       "stage_1_and_2.py reduce_ipg_grads -> buffered_reduce_fallback: the bucket's "
       "gradients flattened and all-reduced",
       "one all-reduce of the flattened bucket",
       Primitive::AllReduce,
       false,
       true},
      {"allreduce",
       1,
       2,
       {{"reduce_scatter", "false"}},
       2,
       [](const ZeroConfig& z) { return !z.reduce_scatter; },
       "all-reduce of each bucket (reduce_scatter: false)",
       "reduce_scatter: false",
       "reduce_ipg_grads -> average_tensor -> gradient_reduction_w_predivide: one all-reduce "
       "of the whole bucket",
       "one all-reduce of the whole bucket",
       Primitive::AllReduce,
       false,
       true},
      {"multi_rank_allreduce",
       1,
       2,
       {},
       3,
       [](const ZeroConfig& z) {
         return z.use_multi_rank_bucket_allreduce &&
                deepspeed_behaviours(z.deepspeed_version).has_multi_rank_bucket_allreduce;
       },
       "all-reduce of packed owner slices (DeepSpeed default)",
       "reduce_scatter: true with use_multi_rank_bucket_allreduce: true (both defaults)",
       "reduce_ipg_grads -> average_tensor -> allreduce_and_scatter: the owners' slices "
       "all-reduced together, each rank keeps its own",
       "the owners' slices packed and all-reduced in runs; each rank keeps its own",
       Primitive::AllReduce,
       true,
       true},
      {"per_slice_reduce",
       1,
       2,
       {},
       3,
       [](const ZeroConfig& z) {
         return !deepspeed_behaviours(z.deepspeed_version).has_multi_rank_bucket_allreduce;
       },
       "one rooted reduce per owner slice of the bucket (DeepSpeed before 0.12.4)",
       "reduce_scatter: true before 0.12.4 (no use_multi_rank_bucket_allreduce yet)",
       "reduce_ipg_grads -> average_tensor -> dist.reduce: one rooted reduce per owner slice, "
       "consecutive slices of one owner merged (0.10-0.12.3)",
       "one rooted reduce per change of owner along the bucket",
       Primitive::Reduce,
       false,
       false},
      {"per_owner_reduce",
       1,
       2,
       {{"use_multi_rank_bucket_allreduce", "false"}},
       4,
       [](const ZeroConfig&) { return true; },
       "one rooted reduce per owner slice (use_multi_rank_bucket_allreduce: false)",
       "reduce_scatter: true with use_multi_rank_bucket_allreduce: false",
       "reduce_ipg_grads -> average_tensor -> allreduce_no_retain(rank=owner) -> dist.reduce: "
       "one rooted reduce per owner the bucket touches",
       "one rooted reduce per run of each owner's slices",
       Primitive::Reduce,
       false,
       true},
      {"reduce_scatter",
       1,
       2,
       {{"native_reduce_scatter", "true"}},
       0,
       [](const ZeroConfig& z) { return z.native_reduce_scatter; },
       "one reduce-scatter per bucket (zerotrain native_reduce_scatter)",
       "native_reduce_scatter: true (zerotrain's switch, checked before DeepSpeed's)",
       "none in DeepSpeed: zerotrain's native_reduce_scatter (DeepSpeed's stages 1/2 never "
       "issue a reduce-scatter)",
       "one reduce-scatter of the whole bucket (an aligned chunk of the layout)",
       Primitive::ReduceScatter,
       false,
       true},
      {"reduce_scatter",
       3,
       3,
       {},
       2,
       [](const ZeroConfig&) { return true; },
       "one reduce-scatter per bucket",
       "stage 3 (reduce_scatter: true, the default)",
       "stage3.py __reduce_and_partition_ipg_grads -> __avg_scatter_grads -> "
       "reduce_scatter_coalesced: one reduce-scatter per bucket",
       "one reduce-scatter of the bucket, each tensor padded to W pieces",
       Primitive::ReduceScatter,
       true,
       true},
      {"allreduce",
       3,
       3,
       {{"reduce_scatter", "false"}},
       0,
       [](const ZeroConfig& z) { return !z.reduce_scatter && z.contiguous_gradients; },
       "all-reduce of each bucket that fits (reduce_scatter: false)",
       "reduce_scatter: false with contiguous_gradients: true; oversized buckets still "
       "reduce-scatter",
       "stage3.py __reduce_and_partition_ipg_grads -> __avg_scatter_contiguous_grads: one "
       "all-reduce per bucket that fits (contiguous_gradients and reduce_scatter: false); a "
       "bucket over reduce_bucket_size still goes through reduce_scatter_coalesced",
       "one all-reduce of a bucket that fits; a larger one reduce-scatters",
       Primitive::AllReduce,
       false,
       true},
      {"reduce_scatter",
       3,
       3,
       {{"reduce_scatter", "false"}, {"contiguous_gradients", "false"}},
       1,
       [](const ZeroConfig& z) { return !z.reduce_scatter && !z.contiguous_gradients; },
       "one reduce-scatter per bucket",
       "reduce_scatter: false with contiguous_gradients: false (stage 3 all-reduces only a "
       "contiguous bucket, so every bucket reduce-scatters)",
       "stage3.py __reduce_and_partition_ipg_grads -> __avg_scatter_grads -> "
       "reduce_scatter_coalesced: without contiguous_gradients every bucket reduce-scatters",
       "one reduce-scatter of the bucket, each tensor padded to W pieces",
       Primitive::ReduceScatter,
       false,
       false},
  };
  return rows;
}

const GradPathRow& select_grad_path(const ZeroConfig& z) {
  std::vector<const GradPathRow*> rows;
  for (const GradPathRow& r : grad_path_registry())
    if (r.first_stage <= z.stage && z.stage <= r.last_stage) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const GradPathRow* a, const GradPathRow* b) {
    return a->precedence < b->precedence;
  });
  for (const GradPathRow* r : rows)
    if (r->applies(z)) return *r;
  throw std::logic_error("select_grad_path: no gradient path for stage " + std::to_string(z.stage));
}

std::vector<const GradPathRow*> listed_grad_paths(int stage) {
  std::vector<const GradPathRow*> out;
  for (const GradPathRow& r : grad_path_registry())
    if (r.listed && r.first_stage <= stage && stage <= r.last_stage) out.push_back(&r);
  return out;
}

ZeroConfig with_grad_path(ZeroConfig z, const GradPathRow& row) {
  const ZeroConfig defaults;
  z.reduce_scatter = defaults.reduce_scatter;
  z.use_multi_rank_bucket_allreduce = defaults.use_multi_rank_bucket_allreduce;
  z.contiguous_gradients = defaults.contiguous_gradients;
  z.native_reduce_scatter = defaults.native_reduce_scatter;
  for (const SwitchChange& c : row.switches) apply_change(z, c);
  return z;
}

}  // namespace zt
