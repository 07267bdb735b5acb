// DeepSpeed's plain path (reduce_scatter: false) and its buffered fallback
// (contiguous_gradients: false): one all-reduce of the whole bucket; every rank
// receives the full sum and keeps only what it owns.
#include "zero/grad_path.h"

namespace zt {
namespace {

class AllReducePath : public GradPath {
 public:
  AllReducePath(Communicator& comm, bool fallback) : comm_(comm), fallback_(fallback) {}
  std::string key() const override { return fallback_ ? "allreduce_fallback" : "allreduce"; }
  std::string describe() const override {
    return fallback_ ? "all-reduce of each bucket (buffered fallback, contiguous_gradients: false)"
                     : "all-reduce of each bucket (reduce_scatter: false)";
  }
  std::vector<Collective> schedule(FlatRange b) const override {
    return {{Primitive::AllReduce, b.size(), -1}};
  }
  std::vector<Handle> reduce(FlatRange b, void* data, DType t) override {
    std::vector<Handle> h;
    h.push_back(comm_.all_reduce(data, b.size(), t));
    return h;
  }

 private:
  Communicator& comm_;
  bool fallback_;
};

}  // namespace

std::unique_ptr<GradPath> make_allreduce_fallback_path(Communicator& comm) {
  return std::unique_ptr<GradPath>(new AllReducePath(comm, true));
}
std::unique_ptr<GradPath> make_allreduce_path(Communicator& comm) {
  return std::unique_ptr<GradPath>(new AllReducePath(comm, false));
}

}  // namespace zt
