// Stage 1: optimizer state sharded. Parameters and gradients stay full; the
// gradients accumulate over the micro-steps in one flat buffer and are reduced
// bucket by bucket at the accumulation boundary through the selected gradient
// path, in place, so each rank finds the sum of its owned slices where they lie.
// It updates its shard and the shards are all-gathered.
#include "zero/grad_path.h"
#include "zero/replicated_params.h"
#include "zero/stages.h"

namespace zt {
namespace {

class Stage1 : public ZeroEngine {
 public:
  Stage1(const ZeroConfig& z, const ParamTable& table, Ops& ops, Communicator& comm)
      : z_(z), table_(table), ops_(ops), comm_(comm),
        partition_(stage12_partition(z, table, comm.world())),
        buckets_(stage12_buckets(z, table, partition_)), path_(make_grad_path(z, partition_, comm)),
        params_(table, partition_, ops, comm, z),
        optimizer_(partition_pieces(table, partition_, comm.rank()), partition_.shard_size(), ops) {
    grads_ = ops_.alloc(partition_.padded_total() * dtype_size(ops.dtype()), MemCategory::Grads);
  }
  ~Stage1() override { ops_.release(grads_); }

  int stage() const override { return 1; }
  std::string grad_path_key() const override { return path_->key(); }
  std::string describe() const override {
    return "zero: stage 1, gradients: " + path_->describe() + ", bucket " +
           std::to_string(z_.reduce_bucket_size) +
           " elements, reduced at the accumulation boundary";
  }
  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    refresh_params_from_master();
  }
  void refresh_params_from_master() override { params_.refresh_from(optimizer_); }
  const void* acquire_params(int u) override { return params_.unit(u); }
  void release_params(int) override {}
  void* acquire_grads(int u) override { return flat(table_.units()[u].offset); }
  void grads_ready(int) override {}
  void begin_micro_step(int micro, int) override {
    if (micro == 0) ops_.memzero(grads_, partition_.padded_total() * dtype_size(ops_.dtype()));
  }
  void end_micro_step() override {}

  double step(const OptimSettings& s, double grad_clip, int t) override {
    std::vector<Handle> pending;
    for (FlatRange b : buckets_) {
      for (Handle& h : path_->reduce(b, flat(b.begin), ops_.dtype())) {
        if (!z_.overlap_comm) h->wait();
        pending.push_back(std::move(h));
      }
    }
    for (auto& h : pending) h->wait();
    const double norm =
        global_grad_norm(optimizer_.grad_sum_squares(grads_, Indexing::Flat), true, ops_, comm_);
    optimizer_.step(grads_, Indexing::Flat, params_.data(), Indexing::Flat, s,
                    clip_scale(norm, grad_clip), t);
    params_.all_gather_shards();
    return norm;
  }

  ShardOptimizer& optimizer() override { return optimizer_; }
  const Partition& partition() const override { return partition_; }

 private:
  void* flat(size_t offset) {
    return static_cast<char*>(grads_) + offset * dtype_size(ops_.dtype());
  }
  ZeroConfig z_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  Partition partition_;
  std::vector<FlatRange> buckets_;
  std::unique_ptr<GradPath> path_;
  ReplicatedParams params_;
  ShardOptimizer optimizer_;
  void* grads_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage1(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage1(z, table, ops, comm));
}

}  // namespace zt
