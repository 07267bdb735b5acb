// How the flat layout is split over W ranks. A partition is a list of groups,
// each a contiguous flat range [begin, begin + padded) whose padded size is a
// multiple of W * kAlign; rank r owns slice r of every group (padded / W
// elements at begin + r * padded / W). Groups are laid out back to back, so the
// padded flat buffer has no holes and each group can be all-gathered in place.
//
//   DeepSpeed stages 1/2: one group, the whole layout (contiguous ranges).
//   zerotrain's true reduce-scatter: one group per gradient bucket.
#pragma once
#include <cstddef>
#include <vector>

namespace zt {

constexpr size_t kAlign = 64;  // elements: keeps every slice 128-byte aligned in bf16

struct FlatRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};

// A piece of a rank's shard: flat [flat_begin, flat_begin + n) <-> shard offset.
struct ShardSegment {
  size_t flat_begin, shard_offset, n;
};

class Partition {
 public:
  // group_sizes: sizes (already multiples of W*kAlign) of consecutive groups starting at 0.
  Partition(const std::vector<size_t>& group_sizes, int world);
  // One group covering `total` elements padded to a multiple of W*kAlign.
  static Partition contiguous(size_t total, int world);
  static size_t pad(size_t n, int world);  // round n up to a multiple of world*kAlign

  int world() const { return world_; }
  size_t padded_total() const { return padded_; }
  size_t shard_size() const { return padded_ / world_; }
  const std::vector<FlatRange>& groups() const { return groups_; }
  // Rank r's slice of group g, in flat coordinates.
  FlatRange slice(size_t g, int r) const;
  // Everything rank r owns, in flat order, with shard offsets.
  std::vector<ShardSegment> segments(int r) const;
  // The owners' pieces of a flat range: (rank, flat sub-range) in flat order.
  std::vector<std::pair<int, FlatRange>> owners_of(FlatRange range) const;

 private:
  std::vector<FlatRange> groups_;
  int world_;
  size_t padded_ = 0;
};

}  // namespace zt
