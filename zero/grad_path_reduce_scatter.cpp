// zerotrain's own path for stages 1/2 (zero.native_reduce_scatter: true): one
// true reduce-scatter per bucket. It needs buckets that split into W equal
// slices, one per owner, so this path comes with a partition whose groups are
// the buckets themselves (plan_aligned_buckets): rank r owns slice r of every
// bucket. Each rank sends (W-1)/W of the bucket: the paper's volume, in one call.
#include <stdexcept>

#include "zero/grad_path.h"

namespace zt {
namespace {

class ReduceScatterPath : public GradPath {
 public:
  ReduceScatterPath(const Partition& p, Communicator& comm) : partition_(p), comm_(comm) {}
  std::string key() const override { return "reduce_scatter"; }
  std::string describe() const override {
    return "one reduce-scatter per bucket (zerotrain native_reduce_scatter)";
  }
  bool needs_aligned_buckets() const override { return true; }
  std::vector<Collective> schedule(FlatRange b) const override {
    return {{Primitive::ReduceScatter, b.size() / partition_.world(), -1}};
  }
  std::vector<Handle> reduce(FlatRange b, void* data, DType t) override {
    if (b.size() % partition_.world() != 0)
      throw std::logic_error("reduce-scatter bucket not divisible by the world size");
    const size_t slice = b.size() / partition_.world();
    char* mine = static_cast<char*>(data) + comm_.rank() * slice * dtype_size(t);
    std::vector<Handle> h;
    h.push_back(comm_.reduce_scatter(data, mine, slice, t));
    return h;
  }

 private:
  const Partition& partition_;
  Communicator& comm_;
};

}  // namespace

std::unique_ptr<GradPath> make_reduce_scatter_path(const Partition& p, Communicator& comm) {
  return std::unique_ptr<GradPath>(new ReduceScatterPath(p, comm));
}

}  // namespace zt
