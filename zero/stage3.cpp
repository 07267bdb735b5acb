// Stage 3: parameters, gradients and optimizer state all sharded (layout and
// residency rules in stage3_layout.h). A unit's parameters are gathered into a
// buffer of the unit's own layout just before it runs, with one coalesced
// all-gather of every rank's slices, and released after it runs unless the
// traced schedule keeps them; with overlap_comm the next units' gathers are
// issued ahead and only waited for when used. Gradients: each unit's staging
// space feeds reduce_bucket_size buckets that are reduced with one true
// reduce-scatter each (an all-reduce when reduce_scatter is false), every
// micro-step, and each rank adds its slices into its gradient shard.
#include <cstdint>
#include <deque>
#include <map>
#include <stdexcept>

#include "zero/grad_staging.h"
#include "zero/replicated_params.h"
#include "zero/stage3_layout.h"
#include "zero/stages.h"

namespace zt {
namespace {

class Stage3 : public ZeroEngine {
 public:
  Stage3(const ZeroConfig& z, const ParamTable& table, Ops& ops, Communicator& comm)
      : z_(z), table_(table), ops_(ops), comm_(comm), dt_(ops.dtype()), es_(dtype_size(dt_)),
        W_(comm.world()), layout_(table, comm.world(), z),
        partition_(Partition({layout_.padded_total()}, comm.world())),
        optimizer_(layout_.pieces(table, comm.rank()), layout_.shard_size(), ops), staging_(ops) {
    shard_params_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Params);
    persistent_ = layout_.persistent_elems() > 0
                      ? ops_.alloc(layout_.persistent_elems() * es_, MemCategory::Params)
                      : nullptr;
    shard_grads_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Grads);
    size_t largest = 0;
    for (const Stage3Bucket& b : layout_.buckets()) largest = std::max(largest, b.slice_total);
    // Each slot: a bucket buffer of W slices and the receive buffer of its reduce-scatter.
    for (int i = 0; i < (z.overlap_comm ? 2 : 1); i++) {
      Slot slot{ops_.alloc(largest * W_ * es_, MemCategory::CommBuffers),
                ops_.alloc(largest * es_, MemCategory::CommBuffers)};
      slots_.push_back(slot);
      free_slots_.push_back(slot);
    }
    resident_.assign(table.num_units(), nullptr);
    use_pos_.assign(table.num_units(), -1);
  }
  ~Stage3() override {
    for (int u = 0; u < table_.num_units(); u++) free_unit(u);
    for (auto& kv : pending_) ops_.release(kv.second.staging);
    for (const Slot& s : slots_) {
      ops_.release(s.data);
      ops_.release(s.recv);
    }
    for (void* p : {shard_params_, persistent_, shard_grads_}) ops_.release(p);
  }

  int stage() const override { return 3; }
  std::string grad_path_key() const override {
    return z_.reduce_scatter ? "reduce_scatter" : "allreduce";
  }
  std::string describe() const override {
    return std::string("zero: stage 3, gradients: ") +
           (z_.reduce_scatter ? "one reduce-scatter per bucket"
                              : "all-reduce of each bucket (reduce_scatter: false)") +
           ", bucket " + std::to_string(z_.reduce_bucket_size) +
           " elements; parameters gathered per unit, " +
           std::to_string(layout_.persistent_elems()) + " persistent elements, prefetch " +
           (z_.overlap_comm ? std::to_string(z_.stage3_prefetch_bucket_size) + " elements ahead"
                            : "off") +
           ", max reuse distance " + std::to_string(z_.stage3_max_reuse_distance) + ", max live " +
           std::to_string(z_.stage3_max_live_parameters);
  }
  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    refresh_params_from_master();
  }
  void refresh_params_from_master() override {
    optimizer_.write_params(shard_params_, Indexing::Shard);
    gather_persistent();
  }
  uint64_t persistent_param_bytes() const override { return layout_.persistent_elems() * es_; }
  uint64_t live_params_peak_bytes() const override { return live_peak_ * es_; }

  // ---- parameters ----
  const void* acquire_params(int u) override {
    const bool scheduled = in_micro_ && !schedule_.gather.empty();
    if (in_micro_ && schedule_.gather.empty()) trace_.push_back(u);
    int pos = -1;
    if (scheduled) {
      pos = pos_++;
      if (pos >= static_cast<int>(trace_.size()) || trace_[pos] != u)
        throw std::logic_error(
            "stage 3: the unit order differs from the one traced at the first step");
    }
    use_pos_[u] = pos;
    if (!resident_[u]) {
      if (!pending_.count(u)) start_gather(u);
      finish_gather(u);
    }
    if (scheduled)
      for (int j : schedule_.prefetch[pos])
        if (!resident_[trace_[j]] && !pending_.count(trace_[j])) start_gather(trace_[j]);
    return resident_[u];
  }
  void release_params(int u) override {
    const int pos = use_pos_[u];
    if (pos >= 0 && schedule_.keep[pos]) return;
    free_unit(u);
  }

  // ---- gradients ----
  void* acquire_grads(int u) override { return staging_.acquire(u, table_.units()[u].numel * es_); }
  // Tensors complete in descending order, which is the buckets' order: copy each
  // tensor's W slices into its bucket; a bucket whose last tensor arrived is reduced.
  void grads_ready(int u) override {
    const UnitRange& ur = table_.units()[u];
    const char* src = staging_.get(u);
    for (int p = ur.first_param + ur.n_params - 1; p >= ur.first_param; p--) {
      const int b = layout_.bucket_of(p);
      const Stage3Bucket& bucket = layout_.buckets()[b];
      if (!open_.data) open_ = take_slot(bucket.slice_total * W_);
      size_t k = 0;
      while (bucket.params[k] != p) k++;
      const ParamInfo& info = table_.params()[p];
      const size_t slice = layout_.tensors()[p].slice;
      for (int r = 0; r < W_; r++) {
        const size_t begin = r * slice;
        if (begin >= info.numel) break;
        const size_t n = std::min(slice, info.numel - begin);
        ops_.copy(static_cast<char*>(open_.data) +
                      (r * bucket.slice_total + bucket.slice_offset[k]) * es_,
                  src + (table_.offset_in_unit(p) + begin) * es_, n * es_);
      }
      if (k + 1 == bucket.params.size()) {
        in_flight_.push_back({b, open_, reduce_bucket(bucket, open_)});
        open_ = Slot();
        if (!z_.overlap_comm) finish_oldest();
      }
    }
    staging_.release(u);
  }

  void begin_micro_step(int micro, int) override {
    if (micro == 0) ops_.memzero(shard_grads_, layout_.shard_size() * es_);
    in_micro_ = true;
    pos_ = 0;
  }
  void end_micro_step() override {
    while (!in_flight_.empty()) finish_oldest();
    while (!pending_.empty()) finish_gather(pending_.begin()->first);
    for (int u = 0; u < table_.num_units(); u++) free_unit(u);
    in_micro_ = false;
    if (schedule_.gather.empty() && !trace_.empty())
      schedule_ = stage3_schedule(trace_, layout_, z_);
  }

  double step(const OptimSettings& s, double grad_clip, int t) override {
    const double norm = global_grad_norm(optimizer_.grad_sum_squares(shard_grads_, Indexing::Shard),
                                         true, ops_, comm_);
    optimizer_.step(shard_grads_, Indexing::Shard, shard_params_, Indexing::Shard, s,
                    clip_scale(norm, grad_clip), t);
    gather_persistent();
    return norm;
  }

  ShardOptimizer& optimizer() override { return optimizer_; }
  const Partition& partition() const override { return partition_; }

 private:
  struct Gather {
    void* staging;
    Handle handle;
  };
  struct Slot {
    void* data = nullptr;
    void* recv = nullptr;
  };
  struct InFlight {
    int bucket;
    Slot slot;
    std::vector<Handle> handles;
  };

  void start_gather(int u) {
    const FlatRange r = layout_.unit_gather_range(u);
    Gather g{nullptr, nullptr};
    if (r.size() > 0) {
      g.staging = ops_.alloc(r.size() * W_ * es_, MemCategory::CommBuffers);
      g.handle = comm_.all_gather(static_cast<char*>(shard_params_) + r.begin * es_, g.staging,
                                  r.size(), dt_);
    }
    pending_[u] = std::move(g);
  }

  // The unit's buffer, in the unit's layout: partitioned tensors unpacked from the
  // gathered slices, persistent tensors copied from the persistent store.
  void finish_gather(int u) {
    Gather g = std::move(pending_[u]);
    pending_.erase(u);
    const UnitRange& ur = table_.units()[u];
    char* buf = static_cast<char*>(ops_.alloc(ur.numel * es_, MemCategory::CommBuffers));
    const FlatRange range = layout_.unit_gather_range(u);
    if (g.handle) g.handle->wait();
    for (int p = ur.first_param; p < ur.first_param + ur.n_params; p++) {
      const Stage3Tensor& st = layout_.tensors()[p];
      const ParamInfo& info = table_.params()[p];
      char* dst = buf + table_.offset_in_unit(p) * es_;
      if (st.persistent) {
        ops_.copy(dst, static_cast<char*>(persistent_) + st.persistent_offset * es_,
                  info.numel * es_);
        continue;
      }
      for (int r = 0; r < W_; r++) {
        const size_t begin = r * st.slice;
        if (begin >= info.numel) break;
        const size_t n = std::min(st.slice, info.numel - begin);
        ops_.copy(dst + begin * es_,
                  static_cast<char*>(g.staging) +
                      (r * range.size() + st.shard_offset - range.begin) * es_,
                  n * es_);
      }
    }
    if (g.staging) ops_.release(g.staging);
    resident_[u] = buf;
    live_ += layout_.unit_gathered_elems(u);
    live_peak_ = std::max(live_peak_, live_);
  }

  void free_unit(int u) {
    if (!resident_[u]) return;
    ops_.release(resident_[u]);
    resident_[u] = nullptr;
    live_ -= layout_.unit_gathered_elems(u);
  }

  // The persistent tensors' updated slices, from every rank, into the store.
  void gather_persistent() {
    const FlatRange r = layout_.persistent_range();
    if (r.size() == 0) return;
    void* staging = ops_.alloc(r.size() * W_ * es_, MemCategory::CommBuffers);
    comm_.all_gather(static_cast<char*>(shard_params_) + r.begin * es_, staging, r.size(), dt_)
        ->wait();
    for (size_t p = 0; p < layout_.tensors().size(); p++) {
      const Stage3Tensor& st = layout_.tensors()[p];
      if (!st.persistent) continue;
      const size_t numel = table_.params()[p].numel;
      for (int q = 0; q < W_; q++) {
        const size_t begin = q * st.slice;
        if (begin >= numel) break;
        ops_.copy(static_cast<char*>(persistent_) + (st.persistent_offset + begin) * es_,
                  static_cast<char*>(staging) + (q * r.size() + st.shard_offset - r.begin) * es_,
                  std::min(st.slice, numel - begin) * es_);
      }
    }
    ops_.release(staging);
  }

  std::vector<Handle> reduce_bucket(const Stage3Bucket& b, const Slot& s) {
    std::vector<Handle> h;
    if (z_.reduce_scatter) h.push_back(comm_.reduce_scatter(s.data, s.recv, b.slice_total, dt_));
    else h.push_back(comm_.all_reduce(s.data, b.slice_total * W_, dt_));
    return h;
  }

  Slot take_slot(size_t elems) {
    if (free_slots_.empty()) finish_oldest();
    Slot s = free_slots_.front();
    free_slots_.pop_front();
    ops_.memzero(s.data, elems * es_);
    return s;
  }

  // Waits for the oldest bucket and adds this rank's slices into the gradient shard.
  void finish_oldest() {
    InFlight f = std::move(in_flight_.front());
    in_flight_.pop_front();
    for (auto& h : f.handles) h->wait();
    const Stage3Bucket& b = layout_.buckets()[f.bucket];
    const char* mine = z_.reduce_scatter ? static_cast<const char*>(f.slot.recv)
                                         : static_cast<const char*>(f.slot.data) +
                                               comm_.rank() * b.slice_total * es_;
    for (size_t k = 0; k < b.params.size(); k++) {
      const Stage3Tensor& st = layout_.tensors()[b.params[k]];
      ops_.add_inplace(static_cast<char*>(shard_grads_) + st.shard_offset * es_,
                       mine + b.slice_offset[k] * es_, st.slice);
    }
    free_slots_.push_back(f.slot);
  }

  ZeroConfig z_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  DType dt_;
  size_t es_;
  int W_;
  Stage3Layout layout_;
  Partition partition_;
  ShardOptimizer optimizer_;
  void *shard_params_, *persistent_, *shard_grads_;
  std::vector<void*> resident_;
  std::vector<int> use_pos_;
  std::map<int, Gather> pending_;
  uint64_t live_ = 0, live_peak_ = 0;
  std::vector<int> trace_;
  Stage3Schedule schedule_;
  bool in_micro_ = false;
  int pos_ = 0;
  GradStaging staging_;
  std::vector<Slot> slots_;
  std::deque<Slot> free_slots_;
  Slot open_;
  std::deque<InFlight> in_flight_;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage3(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage3(z, table, ops, comm));
}

}  // namespace zt
