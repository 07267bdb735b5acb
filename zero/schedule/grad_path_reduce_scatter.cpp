// zerotrain's own path for stages 1/2 (zero.native_reduce_scatter: true): one
// true reduce-scatter per bucket. It needs buckets that split into W equal
// slices, one per owner, so it comes with FlatLayout::aligned, whose partition
// groups are fixed chunks: rank r owns slice r of every chunk, and each chunk is
// a bucket, reduced as soon as every tensor overlapping it has arrived (chunks
// completing together go from the top of the layout down). Each rank sends
// (W-1)/W of the bucket: the paper's volume, in one call. Not DeepSpeed's: no
// setting of DeepSpeed's stages 1/2 issues a reduce-scatter.
#include <algorithm>

#include "zero/schedule/grad_path.h"

namespace zt {
namespace {

class ReduceScatterPath : public GradPath {
 public:
  ReduceScatterPath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l)
      : GradPath(row), table_(t), layout_(l) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    const Partition& part = layout_.partition();
    const size_t n_chunks = part.groups().size();
    const int W = part.world();
    BucketSchedule s;
    s.order = order;
    s.reduce_at.assign(order.size() + 1, {});
    s.buckets.resize(n_chunks);
    std::vector<size_t> missing(n_chunks, 0);  // elements of real tensors not yet arrived
    auto chunk_of = [&](size_t flat) {
      size_t g = 0;
      while (part.groups()[g].end <= flat) g++;
      return g;
    };
    for (int p : order) {
      const size_t begin = layout_.offset(p), end = begin + table_.params()[p].numel;
      for (size_t g = chunk_of(begin); g < n_chunks && part.groups()[g].begin < end; g++)
        missing[g] += std::min(end, part.groups()[g].end) - std::max(begin, part.groups()[g].begin);
    }
    std::vector<int> reduced_order;
    for (size_t i = 0; i < order.size(); i++) {
      std::vector<int> done;
      for (const BucketSlice& piece : owner_pieces(table_, layout_, order[i])) {
        const size_t flat = layout_.offset(piece.param) + piece.param_offset;
        const size_t g = chunk_of(flat);
        // A run of pieces lies in one chunk, its pieces back to back.
        BucketSlice slice = piece;
        slice.offset = flat - part.groups()[g].begin;
        slice.stride = piece.n;
        GradBucket& b = s.buckets[g];
        if (b.params.empty() || b.params.back() != piece.param) b.params.push_back(piece.param);
        b.slices.push_back(slice);
        missing[g] -= piece.n * piece.ranks;
        if (missing[g] == 0) done.push_back(static_cast<int>(g));
      }
      std::sort(done.rbegin(), done.rend());
      for (int g : done) s.reduce_at[i + 1].push_back(g);
    }
    for (size_t g = 0; g < n_chunks; g++) {
      GradBucket& b = s.buckets[g];
      b.size = part.groups()[g].size();
      b.calls.push_back({Primitive::ReduceScatter, 0, b.size / W, -1});
    }
    // Chunks holding only padding are never completed by a tensor: reduce them last.
    for (size_t g = n_chunks; g-- > 0;)
      if (s.buckets[g].params.empty()) s.reduce_at[order.size()].push_back(static_cast<int>(g));
    return s;
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
};

}  // namespace

std::unique_ptr<GradPath> make_reduce_scatter_path(const GradPathRow& row, const ParamTable& t,
                                                   const FlatLayout& l) {
  return std::unique_ptr<GradPath>(new ReduceScatterPath(row, t, l));
}

}  // namespace zt
