// Stage 2: optimizer state and gradients sharded. The model writes each unit's
// gradients into short-lived staging space; when a unit is complete its
// tensors are copied into the gradient bucket(s) that cover them (DeepSpeed's
// contiguous bucket), and every bucket that is now full is reduced through the
// selected path, every micro-step. Each rank adds the sums of its owned slices
// into its gradient shard (model dtype, as DeepSpeed accumulates) and recycles
// the bucket and the staging space, so no full-size gradient buffer ever exists.
// With overlap_comm two buckets alternate: one is reduced while the next fills.
#include <deque>
#include <map>
#include <stdexcept>

#include "zero/grad_path.h"
#include "zero/grad_staging.h"
#include "zero/replicated_params.h"
#include "zero/stages.h"

namespace zt {
namespace {

class Stage2 : public ZeroEngine {
 public:
  Stage2(const ZeroConfig& z, const ParamTable& table, Ops& ops, Communicator& comm)
      : z_(z), table_(table), ops_(ops), comm_(comm), es_(dtype_size(ops.dtype())),
        partition_(stage12_partition(z, table, comm.world())),
        buckets_(stage12_buckets(z, table, partition_)), path_(make_grad_path(z, partition_, comm)),
        params_(table, partition_, ops, comm, z),
        optimizer_(partition_pieces(table, partition_, comm.rank()), partition_.shard_size(), ops),
        segments_(partition_.segments(comm.rank())), staging_(ops) {
    shard_grads_ = ops_.alloc(partition_.shard_size() * es_, MemCategory::Grads);
    size_t largest = 0;
    for (FlatRange b : buckets_) largest = std::max(largest, b.size());
    for (int i = 0; i < (z.overlap_comm ? 2 : 1); i++) {
      slots_.push_back(ops_.alloc(largest * es_, MemCategory::CommBuffers));
      free_slots_.push_back(slots_.back());
    }
  }
  ~Stage2() override {
    ops_.release(shard_grads_);
    for (void* s : slots_) ops_.release(s);
  }

  int stage() const override { return 2; }
  std::string grad_path_key() const override { return path_->key(); }
  std::string describe() const override {
    return "zero: stage 2, gradients: " + path_->describe() + ", bucket " +
           std::to_string(z_.reduce_bucket_size) + " elements, reduced every micro-step" +
           (z_.overlap_comm ? ", overlapped (2 buckets)" : "");
  }
  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    refresh_params_from_master();
  }
  void refresh_params_from_master() override { params_.refresh_from(optimizer_); }
  const void* acquire_params(int u) override { return params_.unit(u); }
  void release_params(int) override {}

  void* acquire_grads(int u) override { return staging_.acquire(u, table_.units()[u].numel * es_); }

  // Units complete in descending flat order, so buckets (also descending) fill in
  // order: copy the unit into the open bucket(s), reduce each that is now full.
  void grads_ready(int u) override {
    const UnitRange& ur = table_.units()[u];
    const FlatRange unit{ur.offset, ur.offset + ur.numel};
    const char* src = staging_.get(u);
    while (next_ < buckets_.size()) {
      const FlatRange b = buckets_[next_];
      if (b.end <= unit.begin) break;
      if (!open_) open_ = take_slot(b.size());
      const size_t lo = std::max(b.begin, unit.begin), hi = std::min(b.end, unit.end);
      if (lo < hi)
        ops_.copy(static_cast<char*>(open_) + (lo - b.begin) * es_, src + (lo - unit.begin) * es_,
                  (hi - lo) * es_);
      if (b.begin < unit.begin) break;  // the rest of this bucket comes with later units
      in_flight_.push_back({b, open_, path_->reduce(b, open_, ops_.dtype())});
      open_ = nullptr;
      next_++;
      if (!z_.overlap_comm) finish_oldest();
    }
    staging_.release(u);
  }

  void begin_micro_step(int micro, int) override {
    if (micro == 0) ops_.memzero(shard_grads_, partition_.shard_size() * es_);
    next_ = 0;
  }
  void end_micro_step() override {
    while (!in_flight_.empty()) finish_oldest();
  }

  double step(const OptimSettings& s, double grad_clip, int t) override {
    const double norm = global_grad_norm(optimizer_.grad_sum_squares(shard_grads_, Indexing::Shard),
                                         true, ops_, comm_);
    optimizer_.step(shard_grads_, Indexing::Shard, params_.data(), Indexing::Flat, s,
                    clip_scale(norm, grad_clip), t);
    params_.all_gather_shards();
    return norm;
  }

  ShardOptimizer& optimizer() override { return optimizer_; }
  const Partition& partition() const override { return partition_; }

 private:
  struct InFlight {
    FlatRange bucket;
    void* data;
    std::vector<Handle> handles;
  };

  // A zeroed slot: the reduce-scatter plan's top bucket reaches into the layout's
  // padding, which no unit writes.
  void* take_slot(size_t elems) {
    if (free_slots_.empty()) finish_oldest();
    void* s = free_slots_.front();
    free_slots_.pop_front();
    ops_.memzero(s, elems * es_);
    return s;
  }

  // Waits for the oldest bucket's reduction and adds this rank's slices of it into
  // the gradient shard.
  void finish_oldest() {
    InFlight f = std::move(in_flight_.front());
    in_flight_.pop_front();
    for (auto& h : f.handles) h->wait();
    for (auto& [owner, piece] : partition_.owners_of(f.bucket)) {
      if (owner != comm_.rank()) continue;
      const size_t shard_off = shard_offset(piece.begin);
      ops_.add_inplace(static_cast<char*>(shard_grads_) + shard_off * es_,
                       static_cast<char*>(f.data) + (piece.begin - f.bucket.begin) * es_,
                       piece.size());
    }
    free_slots_.push_back(f.data);
  }

  size_t shard_offset(size_t flat) const {
    for (const ShardSegment& s : segments_)
      if (flat >= s.flat_begin && flat < s.flat_begin + s.n)
        return s.shard_offset + (flat - s.flat_begin);
    throw std::logic_error("flat offset not owned by this rank");
  }

  ZeroConfig z_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  size_t es_;
  Partition partition_;
  std::vector<FlatRange> buckets_;
  std::unique_ptr<GradPath> path_;
  ReplicatedParams params_;
  ShardOptimizer optimizer_;
  std::vector<ShardSegment> segments_;
  void* shard_grads_;
  std::vector<void*> slots_;
  std::deque<void*> free_slots_;
  void* open_ = nullptr;
  size_t next_ = 0;
  std::deque<InFlight> in_flight_;
  GradStaging staging_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage2(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage2(z, table, ops, comm));
}

}  // namespace zt
