// DeepSpeed's path for reduce_scatter: true with use_multi_rank_bucket_allreduce:
// false: one rooted reduce per owner whose partition the bucket touches, of just
// that owner's slice, chunked by reduce_bucket_size. Each slice crosses the wire
// once (bus bytes = payload), which is the ZeRO paper's gradient volume, but as
// W rooted reduces rather than one reduce-scatter.
#include <cstdint>

#include "zero/bucket_plan.h"
#include "zero/grad_path.h"

namespace zt {
namespace {

class PerOwnerReducePath : public GradPath {
 public:
  PerOwnerReducePath(const Partition& p, Communicator& comm, int64_t chunk)
      : partition_(p), comm_(comm), chunk_(chunk) {}
  std::string key() const override { return "per_owner_reduce"; }
  std::string describe() const override {
    return "one rooted reduce per owner slice (use_multi_rank_bucket_allreduce: false)";
  }
  std::vector<Collective> schedule(FlatRange b) const override {
    std::vector<Collective> out;
    for (auto& [owner, piece] : partition_.owners_of(b))
      for (FlatRange c : split_range(piece, chunk_))
        out.push_back({Primitive::Reduce, c.size(), owner});
    return out;
  }
  std::vector<Handle> reduce(FlatRange b, void* data, DType t) override {
    std::vector<Handle> h;
    const size_t es = dtype_size(t);
    for (auto& [owner, piece] : partition_.owners_of(b))
      for (FlatRange c : split_range(piece, chunk_)) {
        char* p = static_cast<char*>(data) + (c.begin - b.begin) * es;
        h.push_back(comm_.reduce(p, p, c.size(), t, owner));
      }
    return h;
  }

 private:
  const Partition& partition_;
  Communicator& comm_;
  int64_t chunk_;
};

}  // namespace

std::unique_ptr<GradPath> make_per_owner_reduce_path(const Partition& p, Communicator& comm,
                                                     int64_t chunk) {
  return std::unique_ptr<GradPath>(new PerOwnerReducePath(p, comm, chunk));
}

}  // namespace zt
