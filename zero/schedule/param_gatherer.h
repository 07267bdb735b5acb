// Stage 3's parameter gatherer: DeepSpeed's PartitionedParameterCoordinator
// (partitioned_param_coordinator.py, 0.14.4) over zerotrain's module events,
// decision for decision, so that the same model issues the same gathers.
//
//   Trace. The first pass (forward + backward) records the order modules are
//   fetched in; at its end the ranks check they agree (three int64 broadcasts
//   of rank 0's module order, parameter order and parameter step ids; one when
//   a trace was invalidated) and the trace is complete. A later pass whose
//   order differs invalidates it; the pass after re-records.
//   Fetch. A module's parameters that are not available are all-gathered in
//   one coalesced call, then waited for. Once the trace is complete, the
//   parameters of the coming modules are prefetched in one more coalesced
//   call, walking the trace until stage3_prefetch_bucket_size elements are in
//   flight (fewer when stage3_max_live_parameters minus the available ones is
//   smaller); prefetch needs only stage3_prefetch_bucket_size > 0.
//   Release. After a module runs (and after its backward, except for modules
//   whose inputs carry no gradient: PyTorch runs no hook there, so the root
//   and the embeddings stay gathered until the step), its non-persistent
//   parameters are released unless the trace uses them again within
//   stage3_max_reuse_distance elements, or a prefetch already passed a later
//   use. While recording, every parameter is released after use.
//   Step. All parameters are released (release_all); the engine then gathers
//   each persistent tensor with its own call.
//   NVMe read-ahead (offload_param.device nvme, DeepSpeed's
//   __prefetch_nvme_param_partitions): after each fetch, the queue's next
//   parameters that are not available, until their elements pass twice those
//   in flight or offload_param.buffer_count of them, go to the backend's
//   read_ahead.
//   hpZ (zero_hpz_partition_size > 1). Releasing a gathered parameter keeps
//   its secondary piece (1/hpz of it); until the step, gathers of parameters
//   that have one read it over the hpZ group, in a call of their own issued
//   before the call for the others (DeepSpeed's all_gather_coalesced with
//   use_secondary_tensor). So only each step's first gather of a tensor
//   crosses the world; the step drops every secondary piece. Before 0.13.2
//   only backward gathers read the pieces (hpz_forward_reads_secondary).
// Counters follow DeepSpeed, quirks included: the available-element count
// restarts at 0 each pass while the embeddings stay gathered.
//
// Data moves through a GatherBackend: the engine's really gathers, the
// planner's only records.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <vector>

#include "model/param_table.h"
#include "zero/layout/stage3_layout.h"
#include "zero/schedule/gather_from.h"
#include "zero/zero_config.h"

namespace zt {

class GatherBackend {
 public:
  virtual ~GatherBackend() = default;
  // Starts one coalesced all-gather of these parameters' pieces (gather_from.h).
  virtual void gather(const std::vector<int>& params, GatherFrom from) = 0;
  // Completes the call that gathers `param` (and every parameter in it).
  virtual void wait(int param) = 0;
  // The gathered copy of `param` is no longer needed; with keep_secondary
  // (hpZ) its secondary piece is cut from it first, if it has none yet.
  virtual void drop(int param, bool keep_secondary) = 0;
  // hpZ: after the step every secondary piece is stale (DeepSpeed's
  // invalidate_secondary_tensor).
  virtual void drop_secondaries() = 0;
  // Rank 0's values, broadcast (the trace check).
  virtual std::vector<int64_t> broadcast_from_rank0(const std::vector<int64_t>& mine) = 0;
  // zero.offload_param on NVMe: parameters the trace uses after the gathers in
  // flight; the backend may start reading their pieces (a hint, no call).
  virtual void read_ahead(const std::vector<int>& /*params*/) {}
};

enum class ParamStatus { NotAvailable, InFlight, Available };

// The parameters' state, shared by the training and the evaluation gatherer.
struct ParamStates {
  std::vector<ParamStatus> status;
  std::vector<std::set<int>> active;  // modules fetched and not yet released
  std::vector<int> call;              // the gather call an in-flight parameter belongs to
  std::vector<bool> secondary;        // hpZ: has a secondary piece (since its last release)
  std::map<int, std::vector<int>> calls;
  int next_call = 0;
};

// Elements of the non-persistent parameters gathered at once, and their peak
// (summary.json's and plan's stage3_live_params_peak): the engine's gathers
// and plan's recording backend count with the same rule.
class LiveParams {
 public:
  LiveParams(const ParamTable& table, const Stage3Layout& layout)
      : table_(table), layout_(layout), held_(table.params().size(), false) {}
  void gathered(int p) {
    if (layout_.persistent(p) || held_[p]) return;
    held_[p] = true;
    live_ += table_.params()[p].numel;
    peak_ = std::max(peak_, live_);
  }
  void dropped(int p) {
    if (!held_[p]) return;
    held_[p] = false;
    live_ -= table_.params()[p].numel;
  }
  uint64_t peak() const { return peak_; }

 private:
  const ParamTable& table_;
  const Stage3Layout& layout_;
  std::vector<bool> held_;
  uint64_t live_ = 0, peak_ = 0;
};

class ParamGatherer {
 public:
  ParamGatherer(const ParamTable& table, const Stage3Layout& layout, const ZeroConfig& z,
                ParamStates& states, GatherBackend& backend);
  void fetch(int module, bool backward);
  void release(int module, bool backward);
  // The end of a forward + backward (training) or forward (evaluation) pass:
  // the trace check (until the trace is complete), then the walk restarts.
  void end_pass();
  // A training pass's boundaries. Up to DeepSpeed 0.15.3 the backward's end
  // is the pass's end (end_pass); from 0.15.4 (deepspeed_behaviours.h) the
  // trace is checked at the start of every forward instead, so the first
  // forward checks an empty trace and micro-step 1's forward completes it.
  // A backward without start_forward before it (a pipeline's, whose forwards
  // are passes of their own) ends its pass under every release.
  void start_forward();
  void end_backward();
  // Releases every parameter (before the optimizer step).
  void release_all();
  // After the step: each persistent tensor gathered with its own call (outside
  // the hooks' accounting, as DeepSpeed's _post_step does), then (hpZ) every
  // secondary piece dropped.
  void gather_persistent();

 private:
  enum class Mode { Record, Complete, Invalid };
  struct Use {
    int param;
    int64_t step;  // the trace step of the module that uses it
  };
  void gather(const std::vector<int>& params);
  void release_param(int p);
  std::set<int> params_to_release(int module) const;
  // The complete trace's index for params_to_release: the trace steps that
  // fetch each parameter, and the elements fetched before each step.
  void index_trace();
  void check_same_on_all_ranks(const std::vector<int64_t>& values);
  void check_trace();
  void release_backward_leftovers();
  void restart_walk();
  void read_ahead_nvme();

  const ParamTable& table_;
  const Stage3Layout& layout_;
  const ZeroConfig& z_;
  ParamStates& st_;
  GatherBackend& backend_;
  // What module m fetches: its own parameters, or with stage3_block_gathers
  // the whole subtree of a top-level module and nothing for the others.
  std::vector<std::vector<int>> fetch_set_;
  Mode mode_ = Mode::Record;
  std::vector<int> module_order_;
  std::vector<Use> param_trace_;
  std::deque<Use> queue_;
  std::map<int, int64_t> most_recent_;  // param -> latest trace step a fetch or prefetch covered
  std::map<int, std::deque<int64_t>> fetched_at_;
  std::vector<std::vector<int64_t>> trace_uses_;  // param -> ascending trace steps
  std::vector<int64_t> trace_elems_before_;       // trace step -> elements fetched before it
  int64_t step_ = 0;
  int64_t n_available_ = 0;
  // Whether the current fetch (and the prefetches it issues) is a backward's,
  // and whether the release's forwards read secondary pieces as well.
  bool in_backward_ = false;
  bool forward_reads_secondary_ = true;
  bool forward_in_pass_ = false;  // start_forward since the last backward's end
};

}  // namespace zt
