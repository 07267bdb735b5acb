#include "zero/schedule/bucketing.h"

namespace zt {

std::vector<ClosedBucket> close_buckets(const ParamTable& table, const std::vector<int>& order,
                                        int64_t limit, BucketClose rule) {
  const size_t cap = static_cast<size_t>(limit);
  std::vector<ClosedBucket> out;
  ClosedBucket open;
  auto close = [&](size_t at) {
    open.at = at;
    out.push_back(std::move(open));
    open = ClosedBucket();
  };
  for (size_t i = 0; i < order.size(); i++) {
    const size_t n = table.params()[order[i]].numel;
    if (rule == BucketClose::BeforeOverflow && open.elements + n > cap) close(i);
    if (rule == BucketClose::BeforeOverflowUnlessEmpty && open.elements + n > cap &&
        open.elements > 0)
      close(i);
    open.params.push_back(order[i]);
    open.elements += n;
    if (rule == BucketClose::AfterPassing && open.elements > cap) close(i + 1);
  }
  // The rest is reduced after the last tensor (stage 1/2 closes even an empty one).
  if (rule == BucketClose::BeforeOverflow || !open.params.empty()) close(order.size());
  return out;
}

}  // namespace zt
