// Stage 3: parameters, gradients and optimizer state all sharded (layout in
// stage3_layout.h, in the schedule of stage3_schedule.h). Parameters are gathered and released at
// the module events by the gatherer (param_gatherer.h), DeepSpeed's coordinator, over the data
// mover of stage3_gathers.h, which owns the parameter shard and every gathered copy. Gradients:
// each tensor's staging space is packed into DeepSpeed's stage-3 buckets, reduced (one
// reduce-scatter each, or an all-reduce) as their turn comes, every micro-step; each rank adds its
// pieces into its gradient shard (on the last micro-step, with offload_optimizer, their copy to the
// host starts there). The step releases everything, takes one float64 norm per sub-group, updates
// the shard and gathers each persistent tensor. With MiCS all of it runs over the shard group
// (mics_comms.h), and the last micro-step's buckets are then summed across the replica group.
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "model/device_services.h"
#include "zero/comm/quantized_reduce.h"
#include "zero/schedule/param_gatherer.h"
#include "zero/schedule/stage3_hook_order.h"
#include "zero/schedule/stage3_schedule.h"
#include "zero/stages/bucket_reducer.h"
#include "zero/stages/grad_staging.h"
#include "zero/stages/mics_comms.h"
#include "zero/stages/replicated_params.h"
#include "zero/stages/stage3_gathers.h"
#include "zero/stages/stages.h"

namespace zt {
namespace {

class Stage3 : public ZeroEngine {
 public:
  Stage3(const ZeroSetup& s, const ParamTable& table, Ops& ops, Communicator& comm)
      : setup_(s), table_(table), ops_(ops), comm_(comm), es_(dtype_size(ops.dtype())),
        W_(comm.world()), schedule_(s, table, comm.world(), ops.dtype()), layout_(schedule_.layout),
        mics_(schedule_.mics, comm),
        optimizer_(
            mark_norm_pieces(layout_.pieces(table, schedule_.mics.shard.index_of(comm.rank())),
                             table, s.model_parallel),
            layout_.shard_size(), ops, s.z, comm.rank()),
        qgz_(layout_.quantized_gradients(s.z, s.ranks_per_node)
                 ? make_quantized_reduction(comm, s.ranks_per_node, ops)
                 : QuantizedReduction{}),
        reducer_(
            schedule_.grads, ops, mics_.shard(), schedule_.wire,
            [this](const BucketSlice& slice, const void* data) {
              const size_t at = layout_.shard_offset(slice.param);
              ops_.services().add_inplace(static_cast<char*>(shard_grads_) + at * es_, data,
                                          slice.n);
              if (last_micro_) optimizer_.grads_final(shard_grads_, Indexing::Shard, at, slice.n);
            },
            qgz_.reducer.get()),
        gathers_(s.z, table, layout_, ops, comm, mics_),
        train_(table, layout_, setup_.z, states_, gathers_),
        eval_(table, layout_, setup_.z, states_, gathers_), staging_(ops),
        in_hook_order_(schedule_.hook_order, table.params().size()) {
    states_ = released_param_states(table.params().size());
    for (const ModuleInfo& m : table.modules()) module_ptrs_.emplace_back(m.params.size(), nullptr);
    shard_grads_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Grads);
  }
  ~Stage3() override {
    optimizer_.settle_copies();
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
           std::to_string(z.stage3_max_live_parameters) + zeropp_description() + mics_description();
  }
  // MiCS's part of the start line, "" without it.
  std::string mics_description() const {
    const MicsGroups& g = schedule_.mics;
    if (!g.enabled) return "";
    std::string out = "; MiCS: sharded over groups of " + std::to_string(g.shard.size) +
                      " consecutive ranks, replicated over " + std::to_string(g.replica.size) +
                      " groups";
    if (g.hierarchical)
      out += ", parameters gathered across " + std::to_string(g.inter_node.size) +
             " nodes then inside the node (" + std::to_string(g.intra_node.size) + " ranks)";
    return out;
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
  size_t padded_params() const override { return layout_.shard_size() * layout_.world(); }
  std::vector<int> state_replicas() const override {
    return schedule_.mics.replica.members_of(comm_.rank());
  }
  uint64_t persistent_param_bytes() const override { return layout_.persistent_elems() * es_; }
  uint64_t live_params_peak_bytes() const override { return gathers_.live_peak_bytes(); }
  uint64_t hpz_secondary_peak_bytes() const override { return gathers_.secondary_peak_bytes(); }
  uint64_t param_read_ahead_bytes() const override { return gathers_.read_ahead_bytes(); }
  ShardOptimizer& optimizer() override { return optimizer_; }

  void init_weights(const float* full_host) override {
    optimizer_.init_master(full_host);
    refresh_params_from_master();
    if (layout_.hpz() > 1) {
      gathers_.build_secondaries(full_host);
      states_.secondary = started_secondaries(layout_, table_.params().size());
    }
  }
  // Partitioned afresh: nothing gathered, and (a resume's weights) no
  // secondary piece. DeepSpeed 0.14.4 keeps zero.Init's pieces through
  // load_checkpoint (_rigid_load_state_dict re-partitions only parameters
  // that are gathered, and none is), so its first step after a resume would
  // gather the starting weights' pieces; zerotrain gathers over the world.
  void refresh_params_from_master() override {
    gathers_.write_shard(optimizer_);
    for (size_t p = 0; p < states_.status.size(); p++) {
      states_.status[p] = ParamStatus::NotAvailable;
      states_.active[p].clear();
    }
    gathers_.drop_all();
    gathers_.drop_secondaries();
    states_.secondary.assign(states_.secondary.size(), false);
  }

  // ---- module hooks ----
  const void* const* fetch(int module, bool backward) override {
    const bool root = table_.modules()[module].is_root();
    if (root) comm_.annotate(backward ? Phase::Backward : Phase::Forward, micro_);
    if (root && !backward && in_micro_) train_.start_forward();
    gatherer().fetch(module, backward);
    const std::vector<int>& params = table_.modules()[module].params;
    for (size_t k = 0; k < params.size(); k++) {
      if (states_.status[params[k]] != ParamStatus::Available)
        throw std::logic_error("stage 3: " + table_.params()[params[k]].name +
                               " used while not gathered");
      module_ptrs_[module][k] = gathers_.gathered(params[k]);
    }
    return module_ptrs_[module].data();
  }
  void release(int module, bool backward) override {
    ParamGatherer& g = gatherer();
    g.release(module, backward);
    // The root's release closes a pass: its backward in training, its forward otherwise.
    if (!table_.modules()[module].is_root()) return;
    if (backward) g.end_backward();
    else if (!in_micro_) g.end_pass();
  }
  void* grad(int p) override { return staging_.acquire(p, table_.params()[p].numel * es_); }
  void grad_ready(int p) override {
    in_hook_order_.ready(p, [this](int q) {
      reducer_.arrive(q, staging_.get(q));
      staging_.release(q);
    });
  }

  void begin_micro_step(int micro, int n_micro) override {
    if (micro == 0) ops_.memzero(shard_grads_, layout_.shard_size() * es_);
    micro_ = micro;
    last_micro_ = micro + 1 == n_micro;
    in_micro_ = true;
    reducer_.begin();
    in_hook_order_.begin();
    if (!schedule_.replica_reduces.empty())
      reducer_.after_each_bucket(
          last_micro_ ? [this](int b) { reduce_across_replicas(schedule_.replica_reduces[b]); }
                      : std::function<void(int)>());
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
      // DeepSpeed skips the step when any rank overflowed (no norm, no update).
      for (const StepCall& c : schedule_.before_norms)
        if (c.kind == StepCall::OverflowCheck &&
            model_parallel_overflow(any_rank_overflowed(sums, ops_, mics_.shard()),
                                    setup_.model_parallel, ops_)) {
          norm = std::numeric_limits<double>::quiet_NaN();
          return;
        }
      double total = 0;
      for (const StepCall& c : layout_.norm_calls())
        total += all_reduce_scalar(sums[c.group], c.dtype, ops_, mics_.shard());
      norm = model_parallel_norm(total, setup_.model_parallel, ops_);
      gathers_.step_shard(optimizer_, shard_grads_, s, clip_scale(norm, setup_.grad_clip), t);
    });
    return norm;
  }

 private:
  ParamGatherer& gatherer() { return in_micro_ ? train_ : eval_; }
  // A bucket's replica all-reduce: its accumulated pieces, packed, summed
  // over the replica group, unpacked.
  void reduce_across_replicas(const ReplicaReduce& r) {
    comm_.purpose(Purpose::Gradients);
    char* shard = static_cast<char*>(shard_grads_);
    char* packed = static_cast<char*>(ops_.alloc(r.count * es_, MemCategory::CommBuffers));
    size_t at = 0;
    for (int p : r.params) {
      ops_.copy(packed + at * es_, shard + layout_.shard_offset(p) * es_, layout_.piece(p) * es_);
      at += layout_.piece(p);
    }
    mics_.replica().all_reduce(packed, r.count, ops_.dtype())->wait();
    at = 0;
    for (int p : r.params) {
      ops_.copy(shard + layout_.shard_offset(p) * es_, packed + at * es_, layout_.piece(p) * es_);
      at += layout_.piece(p);
    }
    ops_.release(packed);
  }

  ZeroSetup setup_;
  const ParamTable& table_;
  Ops& ops_;
  Communicator& comm_;
  size_t es_;
  int W_;
  Stage3Schedule schedule_;
  const Stage3Layout& layout_;
  // Before the optimizer's files, the reducer and the gathers, which use its communicators.
  MicsComms mics_;
  ShardOptimizer optimizer_;
  void* shard_grads_ = nullptr;
  QuantizedReduction qgz_;
  BucketReducer reducer_;
  // After qgZ's reducer: its communicators are split first, then hpZ's; and before the
  // gatherers, which keep a reference to it.
  Stage3Gathers gathers_;
  ParamStates states_;
  ParamGatherer train_, eval_;
  GradStaging staging_;
  ReadyInOrder in_hook_order_;
  std::vector<std::vector<const void*>> module_ptrs_;
  int micro_ = 0;
  bool in_micro_ = false, last_micro_ = false;
};

}  // namespace

std::unique_ptr<ZeroEngine> make_stage3(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm) {
  return std::unique_ptr<ZeroEngine>(new Stage3(s, t, ops, comm));
}

}  // namespace zt
