// Stage 0 (DDP): full parameters, full gradients accumulated over the
// micro-steps, full optimizer state on every rank. At the accumulation boundary
// the gradients are all-reduced in reduce_bucket_size chunks; every rank then
// runs the same AdamW on everything, so no parameter gather follows.
#include "zero/bucket_plan.h"
#include "zero/replicated_params.h"
#include "zero/stages.h"

namespace zt {
namespace {

class Stage0 : public ZeroEngine {
 public:
  Stage0(const ZeroConfig& z, const ParamTable& table, Ops& ops, Communicator& comm)
      : z_(z), table_(table), ops_(ops), comm_(comm),
        layout_(Partition::contiguous(table.total(), comm.world())),
        replicated_(Partition({layout_.padded_total()}, 1)),
        params_(table, replicated_, ops, comm, z),
        optimizer_(partition_pieces(table, replicated_, 0), replicated_.shard_size(), ops) {
    grads_ = ops_.alloc(layout_.padded_total() * dtype_size(ops.dtype()), MemCategory::Grads);
  }
  ~Stage0() override { ops_.release(grads_); }

  int stage() const override { return 0; }
  std::string grad_path_key() const override { return "allreduce"; }
  std::string describe() const override {
    return "zero: stage 0 (DDP), gradients: all-reduce at the accumulation boundary, bucket " +
           std::to_string(z_.reduce_bucket_size) + " elements";
  }
  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    optimizer_.write_params(params_.data(), Indexing::Flat);
  }
  void refresh_params_from_master() override {
    optimizer_.write_params(params_.data(), Indexing::Flat);
  }
  const void* acquire_params(int u) override { return params_.unit(u); }
  void release_params(int) override {}
  void* acquire_grads(int u) override {
    return static_cast<char*>(grads_) + table_.units()[u].offset * dtype_size(ops_.dtype());
  }
  void grads_ready(int) override {}
  void begin_micro_step(int micro, int) override {
    if (micro == 0) ops_.memzero(grads_, layout_.padded_total() * dtype_size(ops_.dtype()));
  }
  void end_micro_step() override {}

  double step(const OptimSettings& s, double grad_clip, int t) override {
    const DType dt = ops_.dtype();
    std::vector<Handle> pending;
    for (FlatRange c : split_range({0, table_.total()}, z_.reduce_bucket_size)) {
      pending.push_back(
          comm_.all_reduce(static_cast<char*>(grads_) + c.begin * dtype_size(dt), c.size(), dt));
      if (!z_.overlap_comm) pending.back()->wait();
    }
    for (auto& h : pending) h->wait();
    const double norm =
        global_grad_norm(optimizer_.grad_sum_squares(grads_, Indexing::Flat), false, ops_, comm_);
    optimizer_.step(grads_, Indexing::Flat, params_.data(), Indexing::Flat, s,
                    clip_scale(norm, grad_clip), t);
    return norm;
  }

  ShardOptimizer& optimizer() override { return optimizer_; }
  const Partition& partition() const override { return replicated_; }

 private:
  ZeroConfig z_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  Partition layout_, replicated_;
  ReplicatedParams params_;
  ShardOptimizer optimizer_;
  void* grads_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage0(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage0(z, table, ops, comm));
}

}  // namespace zt
