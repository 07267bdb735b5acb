// DeepSpeed's reduce_scatter path before 0.12.4 (no use_multi_rank_bucket_allreduce
// yet; average_tensor -> dist.reduce): the bucket's owner slices in arrival
// order, consecutive slices of one owner merged (rank_and_offsets), each
// reduced to its owner by one rooted reduce. Nothing groups an owner's slices
// or closes runs at reduce_bucket_size, so a bucket issues one call per change
// of owner.
#include "zero/schedule/grad_path.h"

namespace zt {
namespace {

GradBucket per_slice(const std::vector<BucketSlice>& runs, int64_t) {
  GradBucket b;
  for (const BucketSlice& run : runs)
    for (int k = 0; k < run.ranks; k++) {
      BucketSlice s = run.piece(k);
      s.offset = b.size;
      b.size += s.n;
      b.slices.push_back(s);
      if (!b.calls.empty() && b.calls.back().root == s.owner) {
        b.calls.back().count += s.n;
      } else {
        b.calls.push_back({Primitive::Reduce, s.offset, s.n, s.owner});
      }
    }
  return b;
}

class PerSliceReducePath : public GradPath {
 public:
  PerSliceReducePath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l,
                     int64_t bucket)
      : GradPath(row), table_(t), layout_(l), bucket_(bucket) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    return deepspeed_buckets(table_, layout_, order, bucket_, per_slice);
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
  int64_t bucket_;
};

}  // namespace

std::unique_ptr<GradPath> make_per_slice_reduce_path(const GradPathRow& row, const ParamTable& t,
                                                     const FlatLayout& l, int64_t bucket) {
  return std::unique_ptr<GradPath>(new PerSliceReducePath(row, t, l, bucket));
}

}  // namespace zt
