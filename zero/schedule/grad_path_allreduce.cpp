// DeepSpeed's plain path (reduce_scatter: false) and its buffered fallback
// (contiguous_gradients: false): one all-reduce of the whole bucket; every rank
// receives the full sum and keeps only what it owns. Up to 0.14.4 the plain
// path reduces an empty bucket too (a 0-element all-reduce, when the very
// first tensor exceeds the bucket); the fallback, which flattens the bucket's
// gradients first, then has nothing to reduce, and neither has the plain path
// from 0.14.5 (traced: 0.14.4 issues the call, 0.19.8 does not).
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

GradBucket filled(const std::vector<BucketSlice>& pieces, int64_t) {
  GradBucket b = in_arrival_order(pieces);
  if (b.size > 0) b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
  return b;
}

GradBucket filled_empty_too(const std::vector<BucketSlice>& pieces, int64_t) {
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
                                              const FlatLayout& l, int64_t bucket,
                                              AllReduceFill fill) {
  const BucketFill f = fill == AllReduceFill::WholeBuffer      ? whole_buffer
                       : fill == AllReduceFill::FilledEmptyToo ? filled_empty_too
                                                               : filled;
  return std::unique_ptr<GradPath>(new AllReducePath(row, t, l, bucket, f));
}

}  // namespace zt
