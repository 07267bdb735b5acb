// What DeepSpeed's four stage-1/2 paths share: the owner pieces of a tensor,
// the bucketing, and the implementation of the path the registry selects.
#include <algorithm>

#include "zero/schedule/bucketing.h"
#include "zero/schedule/grad_path.h"

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

BucketSchedule deepspeed_buckets(const ParamTable& table, const FlatLayout& layout,
                                 const std::vector<int>& order, int64_t bucket_size,
                                 BucketFill fill) {
  BucketSchedule s;
  s.order = order;
  s.reduce_at.assign(order.size() + 1, {});
  for (const ClosedBucket& c :
       close_buckets(table, order, bucket_size, BucketClose::BeforeOverflow)) {
    std::vector<BucketSlice> pieces;
    for (int p : c.params) {
      std::vector<BucketSlice> own = owner_pieces(table, layout, p);
      pieces.insert(pieces.end(), own.begin(), own.end());
    }
    GradBucket b = fill(pieces, bucket_size);
    b.params = c.params;
    s.reduce_at[c.at].push_back(static_cast<int>(s.buckets.size()));
    s.buckets.push_back(std::move(b));
  }
  return s;
}

std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const ParamTable& table,
                                         const FlatLayout& layout) {
  const GradPathRow& row = select_grad_path(z);
  const int64_t bucket = z.reduce_bucket_size;
  if (row.key == "reduce_scatter") return make_reduce_scatter_path(row, table, layout);
  if (row.key == "allreduce_fallback") return make_allreduce_path(row, table, layout, bucket, true);
  if (row.key == "allreduce") return make_allreduce_path(row, table, layout, bucket, false);
  if (row.key == "multi_rank_allreduce")
    return make_multi_rank_allreduce_path(row, table, layout, bucket);
  return make_per_owner_reduce_path(row, table, layout, bucket);
}

}  // namespace zt
