// What DeepSpeed's four stage-1/2 paths share: the owner pieces of a tensor,
// the bucketing, and the implementation of the path the registry selects.
#include <algorithm>
#include <limits>
#include <utility>

#include "zero/schedule/bucketing.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/grad_path.h"

namespace zt {

size_t BucketSchedule::largest_bucket() const {
  size_t n = 0;
  for (const GradBucket& b : buckets) n = std::max(n, b.size);
  return n;
}

size_t GradBucket::owners() const {
  // As intervals of ranks, merged: a run counts its ranks without listing them.
  std::vector<std::pair<int, int>> spans;
  for (const BucketSlice& s : slices) spans.push_back({s.owner, s.owner + s.ranks});
  std::sort(spans.begin(), spans.end());
  size_t n = 0;
  int end = std::numeric_limits<int>::min();
  for (const auto& [lo, hi] : spans) {
    if (hi <= end) continue;
    n += static_cast<size_t>(hi - std::max(lo, end));
    end = hi;
  }
  return n;
}

std::vector<BucketSlice> owner_pieces(const ParamTable& table, const FlatLayout& layout, int p) {
  std::vector<BucketSlice> out;
  const Partition& part = layout.partition();
  const size_t begin = layout.offset(p), end = begin + table.params()[p].numel;
  for (size_t g = 0; g < part.groups().size(); g++) {
    const FlatRange group = part.groups()[g];
    if (group.end <= begin || group.begin >= end) continue;
    const size_t per_rank = group.size() / part.world();
    const size_t lo = std::max(begin, group.begin), hi = std::min(end, group.end);
    const int last = static_cast<int>((hi - 1 - group.begin) / per_rank);
    // The ranks whose whole slices lie inside [lo, hi) make one run: a piece
    // per rank made every schedule (and a chunked layout's, chunks x W) grow
    // with W.
    const int past_whole = static_cast<int>((hi - group.begin) / per_rank);
    for (int r = static_cast<int>((lo - group.begin) / per_rank); r <= last;) {
      const FlatRange slice = part.slice(g, r);
      const size_t b = std::max(slice.begin, lo), e = std::min(slice.end, hi);
      const int whole = b == slice.begin ? std::max(1, past_whole - r) : 1;
      if (whole > 1 || e - b == per_rank) {
        out.push_back({p, b - begin, per_rank, r, 0, whole, per_rank});
        r += whole;
      } else {
        out.push_back({p, b - begin, e - b, r, 0});
        r++;
      }
    }
  }
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
  const DeepSpeedBehaviours ds = deepspeed_behaviours(z.deepspeed_version);
  const int64_t bucket = z.reduce_bucket_size;
  if (row.key == "reduce_scatter") return make_reduce_scatter_path(row, table, layout);
  if (row.key == "allreduce_fallback")
    return make_allreduce_path(row, table, layout, bucket, AllReduceFill::Filled);
  if (row.key == "allreduce")
    return make_allreduce_path(row, table, layout, bucket,
                               ds.allreduce_path_sends_whole_buffer ? AllReduceFill::WholeBuffer
                               : ds.allreduce_path_reduces_empty_bucket
                                   ? AllReduceFill::FilledEmptyToo
                                   : AllReduceFill::Filled);
  if (row.key == "multi_rank_allreduce")
    return make_multi_rank_allreduce_path(row, table, layout, bucket);
  if (row.key == "per_slice_reduce") return make_per_slice_reduce_path(row, table, layout, bucket);
  return make_per_owner_reduce_path(row, table, layout, bucket, ds.per_owner_path_reduces);
}

}  // namespace zt
