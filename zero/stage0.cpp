// Stage 0 (DDP): full parameters, full gradients accumulated over the
// micro-steps in the model's flat layout, full optimizer state on every rank.
// At the accumulation boundary the gradients are all-reduced in place, bucket
// by bucket as the schedule cut them (5e8 elements, as DeepSpeed's engine);
// every rank then runs the same AdamW on everything, so no parameter gather
// follows. With offload_optimizer each bucket's copy to the host starts as its
// all-reduce completes.
#include "model/device_services.h"
#include "zero/replicated_engine.h"
#include "zero/stages.h"

namespace zt {
namespace {

class Stage0 : public ReplicatedEngine {
 public:
  Stage0(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : ReplicatedEngine(s, table, ops, comm) {
    grads_ = ops_.alloc(table.total() * es_, MemCategory::Grads);
  }
  ~Stage0() override {
    optimizer_.settle_copies();
    ops_.release(grads_);
  }

  std::string describe() const override {
    return "zero: stage 0 (DDP), gradients: " + schedule_.describe + ", " +
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
    std::vector<std::pair<Handle, void*>> pending;  // handle, wire buffer to convert back
    const BucketSchedule& g = schedule_.grads;
    comm_.purpose(Purpose::Gradients);
    for (const std::vector<int>& at : g.reduce_at)
      for (int b : at) {
        const GradBucket& bucket = g.buckets[b];
        char* data = static_cast<char*>(grads_) + offset_bytes(bucket.params.front());
        void* wire = data;
        if (schedule_.wire != ops_.dtype()) {
          wire = ops_.alloc(bucket.size * dtype_size(schedule_.wire), MemCategory::CommBuffers);
          ops_.services().convert(wire, schedule_.wire, data, ops_.dtype(), bucket.size);
        }
        pending.push_back({comm_.all_reduce(wire, bucket.size, schedule_.wire), wire});
        if (!setup_.z.overlap_comm) finish(pending.back(), bucket);
      }
    if (setup_.z.overlap_comm) {
      size_t i = 0;
      for (const std::vector<int>& at : g.reduce_at)
        for (int b : at) finish(pending[i++], g.buckets[b]);
    }
  }

 private:
  size_t offset_bytes(int p) const { return schedule_.layout->offset(p) * es_; }
  void finish(std::pair<Handle, void*>& f, const GradBucket& bucket) {
    f.first->wait();
    char* data = static_cast<char*>(grads_) + offset_bytes(bucket.params.front());
    if (f.second != data) {
      ops_.services().convert(data, ops_.dtype(), f.second, schedule_.wire, bucket.size);
      ops_.release(f.second);
      f.second = data;
    }
    optimizer_.grads_final(grads_, Indexing::Flat, schedule_.layout->offset(bucket.params.front()),
                           bucket.size);
  }
  const void* step_grads() const override { return grads_; }
  Indexing step_grads_indexing() const override { return Indexing::Flat; }
  void* grads_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage0(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage0(s, t, ops, comm));
}

}  // namespace zt
