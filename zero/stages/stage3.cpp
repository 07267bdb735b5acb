// Stage 3: parameters, gradients and optimizer state all sharded (layout in
// stage3_layout.h, in the schedule of stage3_schedule.h). Parameters are gathered and released at
// the module events by the gatherer (param_gatherer.h), DeepSpeed's coordinator; this engine moves
// the data: a coalesced all-gather copies the pieces of every parameter it covers into one send
// buffer, gathers W of them (or, hpZ, the secondary pieces over the hpZ group), and unpacks each
// tensor into its own buffer. qwZ quantizes the send buffer to int8 blocks and gathers codes and
// scales in two calls, dequantizing before the unpack. Gradients: each tensor's staging space is
// packed into DeepSpeed's stage-3 buckets, reduced (one reduce-scatter each, or an all-reduce) as
// their turn comes, every micro-step; each rank adds its pieces into its gradient shard (on the
// last micro-step, with offload_optimizer, their copy to the host starts there). The step releases
// everything, takes one float64 norm per sub-group, updates the shard and gathers each persistent
// tensor.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

#include "model/device_services.h"
#include "zero/stages/bucket_reducer.h"
#include "zero/stages/grad_staging.h"
#include "zero/optim/offload_store.h"
#include "zero/schedule/param_gatherer.h"
#include "zero/comm/quantized_blocks.h"
#include "zero/comm/quantized_reduce.h"
#include "zero/stages/replicated_params.h"
#include "zero/schedule/stage3_schedule.h"
#include "zero/stages/stages.h"

namespace zt {
namespace {

class Stage3 : public ZeroEngine, private GatherBackend {
 public:
  Stage3(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : setup_(s), table_(table), ops_(ops), comm_(comm), dt_(ops.dtype()), es_(dtype_size(dt_)),
        W_(comm.world()), schedule_(s, table, comm.world(), ops.dtype()), layout_(schedule_.layout),
        optimizer_(layout_.pieces(table, comm.rank()), layout_.shard_size(), ops, s.z, comm.rank()),
        qgz_(layout_.quantized_gradients(s.z, s.ranks_per_node)
                 ? make_quantized_reduction(comm, s.ranks_per_node, ops)
                 : QuantizedReduction{}),
        reducer_(
            schedule_.grads, ops, comm, schedule_.wire,
            [this](const BucketSlice& slice, const void* data) {
              const size_t at = layout_.shard_offset(slice.param);
              ops_.services().add_inplace(static_cast<char*>(shard_grads_) + at * es_, data,
                                          slice.n);
              if (last_micro_) optimizer_.grads_final(shard_grads_, Indexing::Shard, at, slice.n);
            },
            qgz_.reducer.get()),
        train_(table, layout_, setup_.z, states_, *this),
        eval_(table, layout_, setup_.z, states_, *this), staging_(ops) {
    const size_t n = table.params().size();
    states_ = released_param_states(n);
    full_.assign(n, nullptr);
    secondary_.assign(n, nullptr);
    if (layout_.hpz() > 1) hpz_comm_ = comm.subgroup(layout_.hpz_group().members_of(comm.rank()));
    for (const ModuleInfo& m : table.modules()) module_ptrs_.emplace_back(m.params.size(), nullptr);
    if (s.z.offload_param.enabled()) {  // zero.offload_param: the shard lives off the device
      param_store_ = make_offload_store(s.z.offload_param, "zero.offload_param", param_dir_,
                                        comm.rank(), "param_shard.bin", layout_.shard_size() * es_,
                                        MemCategory::Params, ops);
      param_uploader_.reset(new StoreUploader(
          *param_store_, ops.services(), s.z.offload_param.pin_memory && ops.on_device(),
          static_cast<size_t>(std::max<int64_t>(1, s.z.offload_param.buffer_count))));
    } else {
      shard_params_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Params);
    }
    shard_grads_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Grads);
  }
  ~Stage3() override {
    optimizer_.settle_copies();
    for (size_t p = 0; p < full_.size(); p++) drop(static_cast<int>(p), false);
    drop_secondaries();
    for (auto& kv : pending_) free_call(kv.second);
    ops_.release(shard_params_);
    ops_.release(shard_grads_);
  }

  int stage() const override { return 3; }
  std::string grad_path_key() const override { return schedule_.path_row->key; }
  std::string describe() const override {
    const ZeroConfig& z = setup_.z;
    return "zero: stage 3, gradients: " + schedule_.path_row->describe + ", bucket " +
           std::to_string(z.reduce_bucket_size) + " elements; parameters gathered " +
           (z.stage3_block_gathers ? "per top-level module (zerotrain stage3_block_gathers)"
                                   : "per submodule") +
           ", " + std::to_string(layout_.persistent_elems()) + " persistent elements, prefetch " +
           (z.stage3_prefetch_bucket_size > 0
                ? std::to_string(z.stage3_prefetch_bucket_size) + " elements"
                : "off") +
           ", max reuse distance " + std::to_string(z.stage3_max_reuse_distance) + ", max live " +
           std::to_string(z.stage3_max_live_parameters) + zeropp_description();
  }
  // ZeRO++'s part of the start line, "" without it.
  std::string zeropp_description() const {
    const ZeroConfig& z = setup_.z;
    std::string out;
    if (layout_.hpz() > 1)
      out +=
          "; hpZ: secondary partition over groups of " + std::to_string(layout_.hpz()) + " ranks";
    if (z.zero_quantized_weights) out += "; qwZ: int8 parameter gathers";
    if (z.zero_quantized_gradients)
      out += qgz_.reducer ? "; qgZ: int4 all-to-all in the node (" +
                                std::to_string(setup_.ranks_per_node) + " ranks), then across " +
                                std::to_string(W_ / setup_.ranks_per_node) + " nodes"
                          : "; qgZ: on one node, so reduce-scatter (as DeepSpeed)";
    return out;
  }
  size_t padded_params() const override { return layout_.shard_size() * W_; }
  uint64_t persistent_param_bytes() const override { return layout_.persistent_elems() * es_; }
  uint64_t live_params_peak_bytes() const override { return live_peak_ * es_; }
  uint64_t hpz_secondary_peak_bytes() const override { return secondary_peak_ * es_; }
  uint64_t param_read_ahead_bytes() const override {
    return param_uploader_ ? param_uploader_->read_ahead_bytes() : 0;
  }
  ShardOptimizer& optimizer() override { return optimizer_; }

  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    refresh_params_from_master();
  }
  // Partitioned afresh, as DeepSpeed starts: nothing gathered.
  void refresh_params_from_master() override {
    if (param_uploader_) param_uploader_->forget_read_ahead();  // the store changes
    if (param_store_) optimizer_.write_params(*param_store_);
    else optimizer_.write_params(shard_params_, Indexing::Shard);
    for (size_t p = 0; p < full_.size(); p++) {
      states_.status[p] = ParamStatus::NotAvailable;
      states_.active[p].clear();
      drop(static_cast<int>(p), false);
    }
    drop_secondaries();
    states_.secondary.assign(states_.secondary.size(), false);
  }

  // ---- module hooks ----
  const void* const* fetch(int module, bool backward) override {
    const bool root = table_.modules()[module].parent < 0;
    if (root) comm_.annotate(backward ? Phase::Backward : Phase::Forward, micro_);
    gatherer().fetch(module, backward);
    const std::vector<int>& params = table_.modules()[module].params;
    for (size_t k = 0; k < params.size(); k++) {
      if (states_.status[params[k]] != ParamStatus::Available)
        throw std::logic_error("stage 3: " + table_.params()[params[k]].name +
                               " used while not gathered");
      module_ptrs_[module][k] = full_[params[k]];
    }
    return module_ptrs_[module].data();
  }
  void release(int module, bool backward) override {
    ParamGatherer& g = gatherer();
    g.release(module, backward);
    // The root's release closes a pass: its backward in training, its forward otherwise.
    if (table_.modules()[module].parent < 0 && (backward || !in_micro_)) g.end_pass();
  }
  void* grad(int p) override { return staging_.acquire(p, table_.params()[p].numel * es_); }
  void grad_ready(int p) override {
    reducer_.arrive(p, staging_.get(p));
    staging_.release(p);
  }

  void begin_micro_step(int micro, int n_micro) override {
    if (micro == 0) ops_.memzero(shard_grads_, layout_.shard_size() * es_);
    micro_ = micro;
    last_micro_ = micro + 1 == n_micro;
    in_micro_ = true;
    reducer_.begin();
  }
  void end_micro_step() override {
    reducer_.finish();
    in_micro_ = false;
  }

  double step(const OptimSettings& s, int t) override {
    comm_.annotate(Phase::Step, micro_);
    double norm = 0;
    run_stage3_step(train_, [&] {
      const std::vector<double> sums = optimizer_.grad_sum_squares(
          shard_grads_, Indexing::Shard, static_cast<int>(layout_.sub_groups().size()));
      double total = 0;
      for (const StepCall& c : layout_.norm_calls())
        total += all_reduce_scalar(sums[c.group], c.dtype, ops_, comm_);
      norm = std::sqrt(total);
      if (param_uploader_) param_uploader_->forget_read_ahead();  // the store changes
      if (param_store_)
        optimizer_.step(shard_grads_, Indexing::Shard, *param_store_, s,
                        clip_scale(norm, setup_.grad_clip), t);
      else
        optimizer_.step(shard_grads_, Indexing::Shard, shard_params_, Indexing::Shard, s,
                        clip_scale(norm, setup_.grad_clip), t);
    });
    return norm;
  }

 private:
  struct Call {
    std::vector<int> params;
    bool secondary = false;
    int ranks = 0;           // of the communicator it runs over
    size_t per_rank = 0;     // elements each rank sends
    void* send = nullptr;    // model dtype
    void* recv = nullptr;    // model dtype, ranks * per_rank
    QuantizedGatherShape q;  // qwZ: codes and scales on the wire
    void *send_q = nullptr, *recv_q = nullptr;
    float *send_s = nullptr, *recv_s = nullptr;
    std::vector<Handle> handles;
  };
  size_t piece_of(const Call& c, int p) const {
    return c.secondary ? layout_.secondary_piece(p) : layout_.piece(p);
  }
  const char* source_of(const Call& c, int p) const {
    return c.secondary ? static_cast<const char*>(secondary_[p])
                       : static_cast<const char*>(shard_params_) + layout_.shard_offset(p) * es_;
  }

  ParamGatherer& gatherer() { return in_micro_ ? train_ : eval_; }

  // ---- GatherBackend ----
  void gather(const std::vector<int>& params, bool from_secondary) override {
    const int id = pending_id_++;
    Call c;
    c.params = params;
    c.secondary = from_secondary;
    Communicator& over = from_secondary ? *hpz_comm_ : comm_;
    c.ranks = over.world();
    for (int p : params) c.per_rank += piece_of(c, p);
    c.send = ops_.alloc(c.per_rank * es_, MemCategory::CommBuffers);
    c.recv = ops_.alloc(c.per_rank * c.ranks * es_, MemCategory::CommBuffers);
    if (!c.secondary && param_uploader_) {
      std::vector<StoreUploader::Range> ranges;
      for (int p : params)
        ranges.push_back({layout_.shard_offset(p) * es_, layout_.piece(p) * es_});
      param_uploader_->upload(ranges, c.send);
    } else {
      size_t at = 0;
      for (int p : params) {
        ops_.copy(static_cast<char*>(c.send) + at * es_, source_of(c, p), piece_of(c, p) * es_);
        at += piece_of(c, p);
      }
    }
    comm_.purpose(Purpose::Parameters);
    if (c.ranks == 1) {
      // A group of one holds the whole tensors: DeepSpeed's all_gather_coalesced takes its
      // _no_gather_coalesced path (no call, no quantization), so this only copies.
      ops_.copy(c.recv, c.send, c.per_rank * es_);
    } else if (setup_.z.zero_quantized_weights) {
      c.q = qwz_shape(c.per_rank);
      c.send_q = ops_.alloc(c.per_rank, MemCategory::CommBuffers);
      c.recv_q = ops_.alloc(c.per_rank * c.ranks, MemCategory::CommBuffers);
      c.send_s = static_cast<float*>(
          ops_.alloc(std::max<size_t>(1, c.q.blocks) * sizeof(float), MemCategory::CommBuffers));
      c.recv_s = static_cast<float*>(ops_.alloc(
          std::max<size_t>(1, c.q.blocks * c.ranks) * sizeof(float), MemCategory::CommBuffers));
      ops_.services().quantize_blocks(c.send_q, c.send_s, c.send, dt_, c.per_rank, c.q.block, 8);
      c.handles.push_back(over.all_gather(c.send_q, c.recv_q, c.per_rank, DType::I8));
      c.handles.push_back(over.all_gather(c.send_s, c.recv_s, c.q.blocks, DType::F32));
    } else {
      c.handles.push_back(over.all_gather(c.send, c.recv, c.per_rank, dt_));
    }
    for (int p : params) call_of_[p] = id;
    pending_[id] = std::move(c);
  }
  void wait(int param) override {
    const int id = call_of_.at(param);
    Call& c = pending_.at(id);
    for (Handle& h : c.handles) h->wait();
    if (c.send_q)
      for (int r = 0; r < c.ranks; r++)
        ops_.services().dequantize_blocks(static_cast<char*>(c.recv) + r * c.per_rank * es_, dt_,
                                          static_cast<const char*>(c.recv_q) + r * c.per_rank,
                                          c.recv_s + r * c.q.blocks, c.per_rank, c.q.block, 8,
                                          false);
    size_t at = 0;
    for (int p : c.params) {
      const size_t numel = table_.params()[p].numel, piece = piece_of(c, p);
      const MemCategory cat =
          layout_.persistent(p) ? MemCategory::Params : MemCategory::CommBuffers;
      char* buf = static_cast<char*>(ops_.alloc(numel * es_, cat));
      for (int r = 0; r < c.ranks && static_cast<size_t>(r) * piece < numel; r++)
        ops_.copy(buf + r * piece * es_, static_cast<char*>(c.recv) + (r * c.per_rank + at) * es_,
                  std::min(piece, numel - r * piece) * es_);
      at += piece;
      full_[p] = buf;
      call_of_.erase(p);
      if (!layout_.persistent(p)) live_ += numel;
    }
    live_peak_ = std::max(live_peak_, live_);
    free_call(c);
    pending_.erase(id);
  }
  void drop(int param, bool keep_secondary) override {
    if (!full_[param]) return;
    if (keep_secondary && !secondary_[param]) {
      // This rank's piece of the tensor in its hpZ group, padding zeroed.
      const size_t numel = table_.params()[param].numel, sec = layout_.secondary_piece(param);
      const size_t begin = static_cast<size_t>(hpz_comm_->rank()) * sec;
      secondary_[param] = ops_.alloc(sec * es_, MemCategory::Params);
      if (begin < numel)
        ops_.copy(secondary_[param], static_cast<char*>(full_[param]) + begin * es_,
                  std::min(sec, numel - begin) * es_);
      secondary_live_ += sec;
      secondary_peak_ = std::max(secondary_peak_, secondary_live_);
    }
    ops_.release(full_[param]);
    full_[param] = nullptr;
    if (!layout_.persistent(param)) live_ -= table_.params()[param].numel;
  }
  void read_ahead(const std::vector<int>& params) override {
    if (!param_uploader_) return;
    for (int p : params)
      param_uploader_->read_ahead({layout_.shard_offset(p) * es_, layout_.piece(p) * es_});
  }
  std::vector<int64_t> broadcast_from_rank0(const std::vector<int64_t>& mine) override {
    std::vector<int64_t> out = mine;
    void* dev =
        ops_.alloc(std::max<size_t>(1, mine.size()) * sizeof(int64_t), MemCategory::CommBuffers);
    ops_.from_host(dev, mine.data(), mine.size() * sizeof(int64_t));
    comm_.purpose(Purpose::Scalars);
    comm_.broadcast(dev, mine.size(), DType::I64, 0)->wait();
    ops_.to_host(out.data(), dev, mine.size() * sizeof(int64_t));
    ops_.release(dev);
    return out;
  }
  void drop_secondaries() override {
    for (void*& s : secondary_)
      if (s) {
        ops_.release(s);
        s = nullptr;
      }
    secondary_live_ = 0;
  }
  void free_call(Call& c) {
    for (void* b : {c.send, c.recv, c.send_q, c.recv_q, static_cast<void*>(c.send_s),
                    static_cast<void*>(c.recv_s)})
      if (b) ops_.release(b);
    c.send = c.recv = c.send_q = c.recv_q = nullptr;
    c.send_s = c.recv_s = nullptr;
  }

  ZeroSetup setup_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  DType dt_;
  size_t es_;
  int W_;
  Stage3Schedule schedule_;
  const Stage3Layout& layout_;
  ShardOptimizer optimizer_;
  void* shard_params_ = nullptr;
  std::shared_ptr<NvmeDirectory> param_dir_;
  std::unique_ptr<OffloadStore> param_store_;      // zero.offload_param: instead of shard_params_
  std::unique_ptr<StoreUploader> param_uploader_;  // its pieces into the gathers' send buffers
  void* shard_grads_ = nullptr;
  QuantizedReduction qgz_;
  BucketReducer reducer_;
  ParamStates states_;
  ParamGatherer train_, eval_;
  GradStaging staging_;
  std::vector<void*> full_;       // each parameter's gathered copy, when available
  std::vector<void*> secondary_;  // hpZ: each parameter's secondary piece, when it has one
  std::unique_ptr<Communicator> hpz_comm_;
  uint64_t secondary_live_ = 0, secondary_peak_ = 0;
  std::vector<std::vector<const void*>> module_ptrs_;
  std::map<int, Call> pending_;
  std::map<int, int> call_of_;
  int pending_id_ = 0;
  uint64_t live_ = 0, live_peak_ = 0;
  int micro_ = 0;
  bool in_micro_ = false, last_micro_ = false;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage3(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage3(s, t, ops, comm));
}

}  // namespace zt
