// Stage 0 (DDP): full parameters, full gradients accumulated over the
// micro-steps in the model's flat layout, full optimizer state on every rank.
// At the accumulation boundary the gradients go through the schedule's
// buckets (5e8 elements, as DeepSpeed's engine), each flattened, all-reduced
// and copied back, one at a time; every rank then runs the same AdamW on
// everything, so no parameter gather follows. With offload_optimizer each
// tensor's copy to the host starts as its bucket's all-reduce completes.
#include "zero/stages/replicated_engine.h"
#include "zero/stages/stages.h"

namespace zt {
namespace {

class Stage0 : public ReplicatedEngine {
 public:
  Stage0(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : ReplicatedEngine(s, table, ops, comm),
        reducer_(schedule_.grads, ops, comm, schedule_.wire,
                 [this](const BucketSlice& slice, const void* data) {
                   const size_t flat = schedule_.layout->offset(slice.param) + slice.param_offset;
                   ops_.copy(static_cast<char*>(grads_) + flat * es_, data, slice.n * es_);
                   optimizer_.grads_final(grads_, Indexing::Flat, flat, slice.n);
                 }) {
    grads_ = static_cast<char*>(ops_.alloc(table.total() * es_, MemCategory::Grads));
  }
  ~Stage0() override {
    optimizer_.settle_copies();
    ops_.release(grads_);
  }

  std::string describe() const override {
    return "zero: stage 0 (DDP), gradients: " + schedule_.path_row->describe + ", " +
           dtype_name(schedule_.wire) + " on the wire";
  }
  void* grad(int p) override { return static_cast<char*>(grads_) + offset_bytes(p); }
  void grad_ready(int) override {}
  void begin_micro_step(int micro, int n_micro) override {
    ReplicatedEngine::begin_micro_step(micro, n_micro);
    if (micro == 0) ops_.memzero(grads_, table_.total() * es_);
  }
  void end_micro_step() override {
    if (!last_micro()) return;
    reducer_.begin();
    for (int p : schedule_.grads.order) reducer_.arrive(p, grads_ + offset_bytes(p));
    reducer_.finish();
  }

 private:
  size_t offset_bytes(int p) const { return schedule_.layout->offset(p) * es_; }
  const void* step_grads() const override { return grads_; }
  Indexing step_grads_indexing() const override { return Indexing::Flat; }
  char* grads_ = nullptr;
  BucketReducer reducer_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage0(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage0(s, t, ops, comm));
}

}  // namespace zt
