// DeepSpeed's path for reduce_scatter: true with use_multi_rank_bucket_allreduce:
// false (average_tensor -> allreduce_no_retain per destination): the bucket's
// owner slices, consecutive slices of one owner merged, are grouped by owner
// (owners in order of first appearance), and each owner's slices are reduced to
// it in runs that close once they pass reduce_bucket_size. Each slice crosses
// the wire once (bus bytes = payload): the ZeRO paper's gradient volume, but as
// rooted reduces rather than one reduce-scatter.
#include <map>

#include "zero/schedule/grad_path.h"

namespace zt {
namespace {

template <Primitive P>
GradBucket per_owner(const std::vector<BucketSlice>& runs, int64_t bucket_size) {
  // Every owner has calls of its own, so the runs are taken apart.
  std::vector<BucketSlice> pieces;
  for (const BucketSlice& run : runs)
    for (int k = 0; k < run.ranks; k++) pieces.push_back(run.piece(k));
  // Merged entries, as index ranges into `pieces`.
  struct Entry {
    int owner;
    size_t first, last, n;
  };
  std::vector<Entry> entries;
  for (size_t i = 0; i < pieces.size(); i++) {
    if (!entries.empty() && entries.back().owner == pieces[i].owner) {
      entries.back().last = i;
      entries.back().n += pieces[i].n;
    } else {
      entries.push_back({pieces[i].owner, i, i, pieces[i].n});
    }
  }
  std::vector<int> owners;  // first-appearance order
  std::map<int, std::vector<const Entry*>> by_owner;
  for (const Entry& e : entries) {
    if (!by_owner.count(e.owner)) owners.push_back(e.owner);
    by_owner[e.owner].push_back(&e);
  }
  GradBucket b;
  for (int owner : owners) {
    size_t run_begin = b.size, run = 0;
    for (const Entry* e : by_owner[owner]) {
      for (size_t i = e->first; i <= e->last; i++) {
        BucketSlice s = pieces[i];
        s.offset = b.size;
        b.size += s.n;
        b.slices.push_back(s);
      }
      run += e->n;
      if (run > static_cast<size_t>(bucket_size)) {
        b.calls.push_back({P, run_begin, run, P == Primitive::Reduce ? owner : -1});
        run_begin = b.size;
        run = 0;
      }
    }
    if (run > 0) b.calls.push_back({P, run_begin, run, P == Primitive::Reduce ? owner : -1});
  }
  return b;
}

class PerOwnerReducePath : public GradPath {
 public:
  PerOwnerReducePath(const GradPathRow& row, const ParamTable& t, const FlatLayout& l,
                     int64_t bucket, bool rooted)
      : GradPath(row), table_(t), layout_(l), bucket_(bucket), rooted_(rooted) {}
  BucketSchedule schedule(const std::vector<int>& order) const override {
    return deepspeed_buckets(
        table_, layout_, order, bucket_,
        rooted_ ? per_owner<Primitive::Reduce> : per_owner<Primitive::AllReduce>);
  }

 private:
  const ParamTable& table_;
  const FlatLayout& layout_;
  int64_t bucket_;
  bool rooted_;
};

}  // namespace

std::unique_ptr<GradPath> make_per_owner_reduce_path(const GradPathRow& row, const ParamTable& t,
                                                     const FlatLayout& l, int64_t bucket,
                                                     bool rooted) {
  return std::unique_ptr<GradPath>(new PerOwnerReducePath(row, t, l, bucket, rooted));
}

}  // namespace zt
