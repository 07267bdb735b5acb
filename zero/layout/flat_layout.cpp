#include "zero/layout/flat_layout.h"

#include <algorithm>

namespace zt {
namespace {

// DeepSpeed's _round_robin_reorder: tensor i joins run i % W; runs in order.
std::vector<int> round_robin(const std::vector<int>& tensors, int world) {
  std::vector<int> out;
  for (int run = 0; run < world; run++)
    for (size_t i = run; i < tensors.size(); i += world) out.push_back(tensors[i]);
  return out;
}

}  // namespace

FlatLayout::FlatLayout(const ParamTable& table, const std::vector<ParamGroup>& groups, int world,
                       bool rr, size_t quantum)
    : groups_(groups), partition_({}, world) {
  offset_.assign(table.params().size(), 0);
  std::vector<size_t> sizes;
  size_t base = 0;
  for (size_t g = 0; g < groups_.size(); g++) {
    if (rr) groups_[g].params = round_robin(groups_[g].params, world);
    size_t off = base;
    for (int p : groups_[g].params) {
      offset_[p] = off;
      off += table.params()[p].numel;
    }
    const size_t padded = Partition::round_up(std::max<size_t>(off - base, 1), quantum);
    group_ranges_.push_back({base, base + padded});
    sizes.push_back(padded);
    base += padded;
  }
  partition_ = Partition(sizes, world);
}

FlatLayout FlatLayout::deepspeed(const ParamTable& table, const std::vector<ParamGroup>& groups,
                                 int world, bool rr) {
  return FlatLayout(table, groups, world, rr, 2 * static_cast<size_t>(world));
}

FlatLayout FlatLayout::aligned(const ParamTable& table, const std::vector<ParamGroup>& groups,
                               int world, int64_t chunk_size) {
  const size_t q = static_cast<size_t>(world) * kAlign;
  FlatLayout l(table, groups, world, false, q);
  const size_t chunk = std::max(q, static_cast<size_t>(chunk_size) / q * q);
  std::vector<size_t> sizes;
  for (const FlatRange& g : l.group_ranges_) {
    std::vector<size_t> cut;  // from the group's top down, then in flat order
    for (size_t hi = g.end; hi > g.begin;) {
      const size_t lo = hi - g.begin > chunk ? hi - chunk : g.begin;
      cut.push_back(hi - lo);
      hi = lo;
    }
    sizes.insert(sizes.end(), cut.rbegin(), cut.rend());
  }
  l.partition_ = Partition(sizes, world);
  return l;
}

FlatLayout FlatLayout::replicated(const ParamTable& table, const std::vector<ParamGroup>& groups) {
  FlatLayout l(table, groups, 1, false, 1);
  for (size_t p = 0; p < table.params().size(); p++) l.offset_[p] = table.params()[p].offset;
  l.group_ranges_.clear();
  l.partition_ = Partition({std::max<size_t>(table.total(), 1)}, 1);
  return l;
}

std::vector<OptimPiece> FlatLayout::pieces(const ParamTable& table, int rank) const {
  std::vector<OptimPiece> out;
  for (size_t g = 0; g < groups_.size(); g++)
    for (int p : groups_[g].params) {
      const ParamInfo& info = table.params()[p];
      for (auto& [owner, r] : partition_.owners_of({offset_[p], offset_[p] + info.numel})) {
        if (owner != rank) continue;
        out.push_back({info.offset + (r.begin - offset_[p]), r.begin,
                       partition_.shard_offset(rank, r.begin), r.size(), groups_[g].decay,
                       static_cast<int>(g)});
      }
    }
  std::sort(out.begin(), out.end(), [](const OptimPiece& a, const OptimPiece& b) {
    return a.shard_offset < b.shard_offset;
  });
  return out;
}

}  // namespace zt
