// DeepSpeed's plain path (reduce_scatter: false) and its buffered fallback
// (contiguous_gradients: false): one all-reduce of the whole bucket; every rank
// receives the full sum and keeps only what it owns. The plain path reduces an
// empty bucket too (a 0-element all-reduce, when the very first tensor exceeds
// the bucket); the fallback, which flattens the bucket's gradients first, then
// has nothing to reduce.
#include <algorithm>

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

// DeepSpeed before 0.14.1: the whole buffer of reduce_bucket_size elements goes
// on the wire (a tensor larger than the buffer goes alone, at its own size);
// the elements past the gradients are padding nobody reads.
GradBucket whole_buffer(const std::vector<BucketSlice>& pieces, int64_t bucket_size) {
  GradBucket b = in_arrival_order(pieces);
  b.size = std::max(b.size, static_cast<size_t>(bucket_size));
  b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
  return b;
}

GradBucket fallback_fill(const std::vector<BucketSlice>& pieces, int64_t) {
  GradBucket b = in_arrival_order(pieces);
  if (b.size > 0) b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
  return b;
}

class AllReducePath : public GradPath {
 public:
  AllReducePath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l, int64_t bucket,
                BucketFill fill)
      : GradPath(row), table_(t), layout_(l), bucket_(bucket), fill_(fill) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    return deepspeed_buckets(table_, layout_, order, bucket_, fill_);
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
  int64_t bucket_;
  BucketFill fill_;
};

}  // namespace

std::unique_ptr<GradPath> make_allreduce_path(const GradPathRow& row, const ParamTable& t,
                                              const FlatLayout& l, int64_t bucket, bool fallback,
                                              bool whole) {
  const BucketFill fill = fallback ? fallback_fill : whole ? whole_buffer : plain;
  return std::unique_ptr<GradPath>(new AllReducePath(row, t, l, bucket, fill));
}

}  // namespace zt
