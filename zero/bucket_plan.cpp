#include "zero/bucket_plan.h"

#include <algorithm>
#include <cstdint>

namespace zt {

std::vector<FlatRange> plan_tensor_buckets(const ParamTable& table, int64_t bucket_size) {
  std::vector<FlatRange> out;
  const auto& params = table.params();
  size_t hi = table.total(), lo = table.total();
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const size_t in_bucket = hi - lo;
    if (in_bucket > 0 && in_bucket + it->numel > static_cast<size_t>(bucket_size)) {
      out.push_back({lo, hi});
      hi = lo;
    }
    lo = it->offset;
  }
  if (hi > lo) out.push_back({lo, hi});
  return out;
}

std::vector<FlatRange> plan_aligned_buckets(size_t padded_total, int world, int64_t bucket_size) {
  const size_t q = static_cast<size_t>(world) * kAlign;
  const size_t chunk = std::max(q, static_cast<size_t>(bucket_size) / q * q);
  std::vector<FlatRange> out;
  for (size_t hi = padded_total; hi > 0;) {
    const size_t lo = hi > chunk ? hi - chunk : 0;
    out.push_back({lo, hi});
    hi = lo;
  }
  return out;
}

std::vector<FlatRange> split_range(FlatRange r, int64_t chunk) {
  std::vector<FlatRange> out;
  const size_t c = static_cast<size_t>(std::max<int64_t>(1, chunk));
  for (size_t b = r.begin; b < r.end; b += c) out.push_back({b, std::min(r.end, b + c)});
  return out;
}

}  // namespace zt
