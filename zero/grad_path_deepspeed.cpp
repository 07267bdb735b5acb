// What DeepSpeed's four stage-1/2 paths share: the owner pieces of a tensor,
// the bucketing rule, and the choice among the paths.
#include <algorithm>

#include "zero/grad_path.h"

namespace zt {

size_t BucketSchedule::largest_bucket() const {
  size_t n = 0;
  for (const GradBucket& b : buckets) n = std::max(n, b.size);
  return n;
}

std::vector<BucketSlice> owner_pieces(const ParamTable& table, const FlatLayout& layout, int p) {
  std::vector<BucketSlice> out;
  const size_t begin = layout.offset(p), numel = table.params()[p].numel;
  for (auto& [owner, r] : layout.partition().owners_of({begin, begin + numel}))
    out.push_back({p, r.begin - begin, r.size(), owner, 0});
  return out;
}

// reduce_independent_p_g_buckets_and_remove_grads: `if elements_in_ipg_bucket +
// param.numel() > reduce_bucket_size: reduce_ipg_grads()` runs before the tensor
// joins, whether or not the bucket holds anything.
BucketSchedule deepspeed_buckets(const ParamTable& table, const FlatLayout& layout,
                                 const std::vector<int>& order, int64_t bucket_size,
                                 BucketFill fill) {
  BucketSchedule s;
  s.order = order;
  s.reduce_at.assign(order.size() + 1, {});
  std::vector<int> members;
  size_t elements = 0;
  auto close = [&](size_t at) {
    std::vector<BucketSlice> pieces;
    for (int p : members) {
      std::vector<BucketSlice> own = owner_pieces(table, layout, p);
      pieces.insert(pieces.end(), own.begin(), own.end());
    }
    GradBucket b = fill(pieces, bucket_size);
    b.params = members;
    s.reduce_at[at].push_back(static_cast<int>(s.buckets.size()));
    s.buckets.push_back(std::move(b));
    members.clear();
    elements = 0;
  };
  for (size_t i = 0; i < order.size(); i++) {
    const size_t n = table.params()[order[i]].numel;
    if (elements + n > static_cast<size_t>(bucket_size)) close(i);
    members.push_back(order[i]);
    elements += n;
  }
  close(order.size());
  return s;
}

std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const ParamTable& table,
                                         const FlatLayout& layout) {
  if (z.native_reduce_scatter) return make_reduce_scatter_path(table, layout);
  if (!z.contiguous_gradients)
    return make_allreduce_path(table, layout, z.reduce_bucket_size, true);
  if (!z.reduce_scatter) return make_allreduce_path(table, layout, z.reduce_bucket_size, false);
  if (z.use_multi_rank_bucket_allreduce)
    return make_multi_rank_allreduce_path(table, layout, z.reduce_bucket_size);
  return make_per_owner_reduce_path(table, layout, z.reduce_bucket_size);
}

}  // namespace zt
