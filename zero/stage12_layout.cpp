// Partition and bucket plan for stages 1 and 2, and the stage selector.
#include "zero/bucket_plan.h"
#include "zero/stages.h"

namespace zt {

Partition stage12_partition(const ZeroConfig& z, const ParamTable& table, int world) {
  if (!z.native_reduce_scatter) return Partition::contiguous(table.total(), world);
  // One partition group per aligned bucket, in flat order.
  auto buckets =
      plan_aligned_buckets(Partition::pad(table.total(), world), world, z.reduce_bucket_size);
  std::vector<size_t> sizes;
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) sizes.push_back(it->size());
  return Partition(sizes, world);
}

std::vector<FlatRange> stage12_buckets(const ZeroConfig& z, const ParamTable& table,
                                       const Partition& partition) {
  if (!z.native_reduce_scatter) return plan_tensor_buckets(table, z.reduce_bucket_size);
  return plan_aligned_buckets(partition.padded_total(), partition.world(), z.reduce_bucket_size);
}

std::unique_ptr<ZeroEngine> make_zero_engine(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                             Communicator& comm) {
  switch (z.stage) {
    case 0: return make_stage0(z, table, ops, comm);
    case 1: return make_stage1(z, table, ops, comm);
    case 2: return make_stage2(z, table, ops, comm);
    default: return make_stage3(z, table, ops, comm);
  }
}

}  // namespace zt
