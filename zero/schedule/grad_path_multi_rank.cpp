// DeepSpeed's default path (reduce_scatter: true, use_multi_rank_bucket_allreduce:
// true; average_tensor -> allreduce_and_scatter): the bucket's owner slices, in
// arrival order with consecutive slices of one owner merged, are all-reduced
// together in runs that close once they pass reduce_bucket_size (a slice is
// never cut); each rank then keeps its own slices. Despite the reduce_scatter
// switch the wire sees all-reduces: about 2(W-1)/W of the bucket per rank, not
// the (W-1)/W of a reduce-scatter.
#include "zero/schedule/grad_path.h"

namespace zt {
namespace {

GradBucket multi_rank(const std::vector<BucketSlice>& pieces, int64_t bucket_size) {
  GradBucket b;
  size_t run_begin = 0, run = 0;
  int prev_owner = -1;
  for (BucketSlice s : pieces) {
    s.offset = b.size;
    s.stride = s.n;
    b.size += s.n * s.ranks;
    b.slices.push_back(s);
    // rank_and_offsets merges a slice into the previous one of the same owner;
    // the run-closing test sees merged slices (each owner's piece of a run).
    for (int k = 0; k < s.ranks; k++) {
      const BucketSlice piece = s.piece(k);
      if (piece.owner == prev_owner && run > 0) {
        run += piece.n;
      } else {
        if (run > static_cast<size_t>(bucket_size)) {
          b.calls.push_back({Primitive::AllReduce, run_begin, run, -1});
          run_begin = piece.offset;
          run = 0;
        }
        run += piece.n;
      }
      prev_owner = piece.owner;
    }
  }
  if (run > 0) b.calls.push_back({Primitive::AllReduce, run_begin, run, -1});
  return b;
}

class MultiRankAllReducePath : public GradPath {
 public:
  MultiRankAllReducePath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l,
                         int64_t bucket)
      : GradPath(row), table_(t), layout_(l), bucket_(bucket) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    return deepspeed_buckets(table_, layout_, order, bucket_, multi_rank);
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
  int64_t bucket_;
};

}  // namespace

std::unique_ptr<GradPath> make_multi_rank_allreduce_path(const GradPathRow& row,
                                                         const ParamTable& t, const FlatLayout& l,
                                                         int64_t bucket) {
  return std::unique_ptr<GradPath>(new MultiRankAllReducePath(row, t, l, bucket));
}

}  // namespace zt
