// DeepSpeed's plain path (reduce_scatter: false) and its buffered fallback
// (contiguous_gradients: false): one all-reduce of the whole bucket; every rank
// receives the full sum and keeps only what it owns. The plain path reduces an
// empty bucket too (a 0-element all-reduce, when the very first tensor exceeds
// the bucket); the fallback, which flattens the bucket's gradients first, then
// has nothing to reduce.
#include "zero/schedule/grad_path.h"

namespace zt {
namespace {

GradBucket in_arrival_order(const std::vector<BucketSlice>& pieces) {
  GradBucket b;
  for (BucketSlice s : pieces) {
    s.offset = b.size;
    s.stride = s.n;
    b.size += s.n * s.ranks;
    b.slices.push_back(s);
  }
  return b;
}

GradBucket plain(const std::vector<BucketSlice>& pieces, int64_t) {
  GradBucket b = in_arrival_order(pieces);
  b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
  return b;
}

GradBucket fallback(const std::vector<BucketSlice>& pieces, int64_t) {
  GradBucket b = in_arrival_order(pieces);
  if (b.size > 0) b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
  return b;
}

class AllReducePath : public GradPath {
 public:
  AllReducePath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l, int64_t bucket,
                bool fallback)
      : GradPath(row), table_(t), layout_(l), bucket_(bucket), fallback_(fallback) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    return deepspeed_buckets(table_, layout_, order, bucket_, fallback_ ? fallback : plain);
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
  int64_t bucket_;
  bool fallback_;
};

}  // namespace

std::unique_ptr<GradPath> make_allreduce_path(const GradPathRow& row, const ParamTable& t,
                                              const FlatLayout& l, int64_t bucket, bool fallback) {
  return std::unique_ptr<GradPath>(new AllReducePath(row, t, l, bucket, fallback));
}

}  // namespace zt
