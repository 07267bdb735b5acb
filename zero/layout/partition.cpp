#include "zero/layout/partition.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zt {

Partition::Partition(const std::vector<size_t>& sizes, int world) : world_(world) {
  for (size_t s : sizes) {
    if (s == 0 || s % static_cast<size_t>(world) != 0)
      throw std::logic_error("partition group of " + std::to_string(s) +
                             " elements is not a positive multiple of " + std::to_string(world));
    groups_.push_back({padded_, padded_ + s});
    padded_ += s;
  }
}

FlatRange Partition::slice(size_t g, int r) const {
  const size_t s = groups_[g].size() / world_;
  return {groups_[g].begin + r * s, groups_[g].begin + (r + 1) * s};
}

std::vector<std::pair<int, FlatRange>> Partition::owners_of(FlatRange range) const {
  std::vector<std::pair<int, FlatRange>> out;
  for (size_t g = 0; g < groups_.size(); g++) {
    if (groups_[g].end <= range.begin || groups_[g].begin >= range.end) continue;
    // Only the ranks whose slices meet the range: visiting all W for every
    // tensor made a layout cost tensors x W.
    const size_t per_rank = groups_[g].size() / world_;
    const size_t first = (std::max(range.begin, groups_[g].begin) - groups_[g].begin) / per_rank;
    for (int r = static_cast<int>(first); r < world_; r++) {
      FlatRange s = slice(g, r);
      if (s.begin >= range.end) break;
      out.push_back({r, {std::max(s.begin, range.begin), std::min(s.end, range.end)}});
    }
  }
  return out;
}

size_t Partition::shard_offset(int r, size_t flat) const {
  size_t shard = 0;
  for (size_t g = 0; g < groups_.size(); g++) {
    const FlatRange s = slice(g, r);
    if (flat >= s.begin && flat < s.end) return shard + (flat - s.begin);
    shard += s.size();
  }
  throw std::logic_error("flat offset " + std::to_string(flat) + " is not owned by rank " +
                         std::to_string(r));
}

}  // namespace zt
