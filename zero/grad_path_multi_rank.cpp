// DeepSpeed's default path (reduce_scatter: true, use_multi_rank_bucket_allreduce:
// true): the slices of every owner the bucket touches are packed into one buffer
// and all-reduced together, in chunks of reduce_bucket_size; each rank then keeps
// its own slices. Despite the reduce_scatter switch, the wire sees all-reduces:
// about 2(W-1)/W of the bucket per rank, not the (W-1)/W of a reduce-scatter.
// In zerotrain the bucket is already packed in flat order, so packing costs nothing.
#include <cstdint>

#include "zero/bucket_plan.h"
#include "zero/grad_path.h"

namespace zt {
namespace {

class MultiRankAllReducePath : public GradPath {
 public:
  MultiRankAllReducePath(const Partition& p, Communicator& comm, int64_t chunk)
      : partition_(p), comm_(comm), chunk_(chunk) {}
  std::string key() const override { return "multi_rank_allreduce"; }
  std::string describe() const override {
    return "all-reduce of packed owner slices (DeepSpeed default)";
  }
  std::vector<Collective> schedule(FlatRange b) const override {
    std::vector<Collective> out;
    for (FlatRange c : split_range(packed(b), chunk_))
      out.push_back({Primitive::AllReduce, c.size(), -1});
    return out;
  }
  std::vector<Handle> reduce(FlatRange b, void* data, DType t) override {
    std::vector<Handle> h;
    const size_t es = dtype_size(t);
    for (FlatRange c : split_range(packed(b), chunk_))
      h.push_back(
          comm_.all_reduce(static_cast<char*>(data) + (c.begin - b.begin) * es, c.size(), t));
    return h;
  }

 private:
  // The owners' slices of the bucket, packed: they tile the bucket exactly.
  FlatRange packed(FlatRange b) const {
    auto owners = partition_.owners_of(b);
    return owners.empty() ? b : FlatRange{owners.front().second.begin, owners.back().second.end};
  }
  const Partition& partition_;
  Communicator& comm_;
  int64_t chunk_;
};

}  // namespace

std::unique_ptr<GradPath> make_multi_rank_allreduce_path(const Partition& p, Communicator& comm,
                                                         int64_t chunk) {
  return std::unique_ptr<GradPath>(new MultiRankAllReducePath(p, comm, chunk));
}

}  // namespace zt
