// How a flat buffer is split over W ranks. A partition is a list of groups,
// each a contiguous flat range [begin, begin + size) whose size is a multiple
// of W; rank r owns slice r of every group (size / W elements at begin + r *
// size / W). Groups are laid out back to back, so the buffer has no holes and
// each group can be all-gathered in place.
//
//   DeepSpeed stages 1/2: one group per optimizer parameter group (its flat
//   buffer padded to 2W, zero/layout/flat_layout.h).
//   zerotrain's true reduce-scatter: fixed aligned chunks of those buffers.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace zt {

constexpr size_t kAlign = 64;  // elements per rank of zerotrain's aligned chunks

struct FlatRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};

class Partition {
 public:
  // group_sizes: sizes (multiples of world) of consecutive groups starting at 0.
  Partition(const std::vector<size_t>& group_sizes, int world);
  // n rounded up to a multiple of q.
  static size_t round_up(size_t n, size_t q) { return (n + q - 1) / q * q; }

  int world() const { return world_; }
  size_t padded_total() const { return padded_; }
  size_t shard_size() const { return padded_ / world_; }
  const std::vector<FlatRange>& groups() const { return groups_; }
  // Rank r's slice of group g, in flat coordinates.
  FlatRange slice(size_t g, int r) const;
  // The owners' pieces of a flat range: (rank, flat sub-range) in flat order.
  std::vector<std::pair<int, FlatRange>> owners_of(FlatRange range) const;
  // Rank r's shard offset of a flat element it owns.
  size_t shard_offset(int r, size_t flat) const;

 private:
  std::vector<FlatRange> groups_;
  int world_;
  size_t padded_ = 0;
};

}  // namespace zt
