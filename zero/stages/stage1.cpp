// Stage 1: optimizer state sharded. Parameters and gradients stay full; the
// gradients accumulate over the micro-steps in one buffer laid out like the
// parameters, and are reduced through the gradient path once per step: at the
// accumulation boundary walking the parameter groups in order (DeepSpeed's
// reduce_gradients), or, with overlap_comm, during the last backward as each
// gradient completes (DeepSpeed's hooks). Each rank's owned slices of the sums
// are copied back where they lie (final: with offload_optimizer their copy to
// the host starts there); it updates its shard and the shards are all-gathered.
#include "zero/stages/replicated_engine.h"
#include "zero/stages/stages.h"

namespace zt {
namespace {

class Stage1 : public ReplicatedEngine {
 public:
  Stage1(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : ReplicatedEngine(s, table, ops, comm),
        reducer_(schedule_.grads, ops, comm, schedule_.wire,
                 [this](const BucketSlice& slice, const void* data) {
                   ops_.copy(at(slice.param, slice.param_offset), data, slice.n * es_);
                   optimizer_.grads_final(
                       grads_, Indexing::Flat,
                       schedule_.layout->offset(slice.param) + slice.param_offset, slice.n);
                 }) {
    grads_ = ops_.alloc(schedule_.layout->padded_total() * es_, MemCategory::Grads);
  }
  ~Stage1() override {
    optimizer_.settle_copies();
    ops_.release(grads_);
  }

  std::string describe() const override {
    return "zero: stage 1, gradients: " + schedule_.path_row->describe + ", bucket " +
           std::to_string(setup_.z.reduce_bucket_size) + " elements, " +
           dtype_name(schedule_.wire) + " on the wire, reduced " +
           (schedule_.during_backward ? "during the last backward (overlap_comm)"
                                      : "at the accumulation boundary");
  }
  void* grad(int p) override { return at(p, 0); }
  void grad_ready(int p) override {
    if (schedule_.during_backward && last_micro()) reducer_.arrive(p, at(p, 0));
  }
  void begin_micro_step(int micro, int n_micro) override {
    ReplicatedEngine::begin_micro_step(micro, n_micro);
    if (micro == 0) ops_.memzero(grads_, schedule_.layout->padded_total() * es_);
    if (last_micro()) reducer_.begin();
  }
  void end_micro_step() override {
    if (!last_micro()) return;
    if (!schedule_.during_backward)
      for (int p : schedule_.grads.order) reducer_.arrive(p, at(p, 0));
    reducer_.finish();
  }

 private:
  char* at(int p, size_t elem) const {
    return static_cast<char*>(grads_) + (schedule_.layout->offset(p) + elem) * es_;
  }
  const void* step_grads() const override { return grads_; }
  Indexing step_grads_indexing() const override { return Indexing::Flat; }
  BucketReducer reducer_;
  void* grads_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage1(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage1(s, t, ops, comm));
}

}  // namespace zt
