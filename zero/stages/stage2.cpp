// Stage 2: optimizer state and gradients sharded. The model adds each tensor's
// gradient into short-lived staging space; when it is complete it is packed
// into the bucket the schedule assigned it (DeepSpeed's contiguous bucket), and
// buckets are reduced through the gradient path as their turn comes, every
// micro-step. Each rank adds the sums of its owned slices into its gradient
// shard (model dtype, as DeepSpeed accumulates) and recycles the bucket and the
// staging space, so no full-size gradient buffer ever exists. With
// overlap_comm two buckets alternate: one is reduced while the next fills.
// On the last micro-step each added slice is final, and with offload_optimizer
// its copy to the host starts there.
#include "model/device_services.h"
#include "zero/stages/grad_staging.h"
#include "zero/stages/replicated_engine.h"
#include "zero/stages/stages.h"

namespace zt {
namespace {

class Stage2 : public ReplicatedEngine {
 public:
  Stage2(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : ReplicatedEngine(s, table, ops, comm),
        reducer_(schedule_.grads, ops, comm, schedule_.wire,
                 [this](const BucketSlice& slice, const void* data) {
                   const size_t flat = schedule_.layout->offset(slice.param) + slice.param_offset;
                   const size_t off =
                       schedule_.layout->partition().shard_offset(comm_.rank(), flat);
                   ops_.services().add_inplace(static_cast<char*>(shard_grads_) + off * es_, data,
                                               slice.n);
                   if (last_micro())
                     optimizer_.grads_final(shard_grads_, Indexing::Shard, off, slice.n);
                 }),
        staging_(ops) {
    shard_grads_ = ops_.alloc(schedule_.layout->partition().shard_size() * es_, MemCategory::Grads);
  }
  ~Stage2() override {
    optimizer_.settle_copies();
    ops_.release(shard_grads_);
  }

  std::string describe() const override {
    return "zero: stage 2, gradients: " + schedule_.path_row->describe + ", bucket " +
           std::to_string(setup_.z.reduce_bucket_size) + " elements, " +
           dtype_name(schedule_.wire) + " on the wire, reduced every micro-step" +
           (schedule_.grads.buffers > 1 ? ", overlapped (2 buckets)" : "");
  }
  void* grad(int p) override { return staging_.acquire(p, table_.params()[p].numel * es_); }
  void grad_ready(int p) override {
    reducer_.arrive(p, staging_.get(p));
    staging_.release(p);
  }
  void begin_micro_step(int micro, int n_micro) override {
    ReplicatedEngine::begin_micro_step(micro, n_micro);
    if (micro == 0) ops_.memzero(shard_grads_, schedule_.layout->partition().shard_size() * es_);
    reducer_.begin();
  }
  void end_micro_step() override { reducer_.finish(); }

 private:
  const void* step_grads() const override { return shard_grads_; }
  Indexing step_grads_indexing() const override { return Indexing::Shard; }
  void* shard_grads_;
  BucketReducer reducer_;
  GradStaging staging_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage2(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage2(s, t, ops, comm));
}

}  // namespace zt
