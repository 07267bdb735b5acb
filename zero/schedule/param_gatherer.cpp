#include "zero/schedule/param_gatherer.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

constexpr int64_t kNeverFetched = -10000000000;  // DeepSpeed's int(-1e10)

}  // namespace

ParamGatherer::ParamGatherer(const ParamTable& table, const Stage3Layout& layout,
                             const ZeroConfig& z, ParamStates& states, GatherBackend& backend)
    : table_(table), layout_(layout), z_(z), st_(states), backend_(backend),
      forward_reads_secondary_(
          deepspeed_behaviours(z.deepspeed_version).hpz_forward_reads_secondary) {
  const auto& mods = table.modules();
  fetch_set_.resize(mods.size());
  for (size_t m = 0; m < mods.size(); m++) {
    if (!z.stage3_block_gathers) {
      fetch_set_[m] = mods[m].params;
      continue;
    }
    if (mods[m].parent < 0 || mods[mods[m].parent].parent >= 0) continue;
    // A top-level module gathers everything beneath it.
    for (size_t d = m; d < mods.size(); d++) {
      int a = static_cast<int>(d);
      while (a >= 0 && a != static_cast<int>(m)) a = mods[a].parent;
      if (a == static_cast<int>(m))
        fetch_set_[m].insert(fetch_set_[m].end(), mods[d].params.begin(), mods[d].params.end());
    }
    std::sort(fetch_set_[m].begin(), fetch_set_[m].end());
  }
}

void ParamGatherer::gather(const std::vector<int>& params) {
  std::vector<int> todo;
  for (int p : params)
    if (st_.status[p] == ParamStatus::NotAvailable) todo.push_back(p);
  if (todo.empty()) return;
  std::sort(todo.begin(), todo.end());
  for (int p : todo) n_available_ += static_cast<int64_t>(table_.params()[p].numel);
  std::vector<int> with_secondary, without;
  const bool read_secondary = in_backward_ || forward_reads_secondary_;
  for (int p : todo) (st_.secondary[p] && read_secondary ? with_secondary : without).push_back(p);
  for (const std::vector<int>* part : {&with_secondary, &without}) {
    if (part->empty()) continue;
    const int call = st_.next_call++;
    for (int p : *part) {
      st_.status[p] = ParamStatus::InFlight;
      st_.call[p] = call;
    }
    st_.calls[call] = *part;
    backend_.gather(*part, part == &with_secondary ? GatherFrom::Secondary : GatherFrom::Primary);
  }
}

void ParamGatherer::fetch(int module, bool backward) {
  in_backward_ = backward;
  // trace_prologue, then record_module.
  if (mode_ == Mode::Complete && (static_cast<int64_t>(module_order_.size()) <= step_ ||
                                  module_order_[static_cast<size_t>(step_)] != module)) {
    mode_ = Mode::Invalid;
    module_order_.clear();
    param_trace_.clear();
    queue_.clear();
    most_recent_.clear();
  }
  if (mode_ == Mode::Record) {
    module_order_.push_back(module);
    fetched_at_[module].push_back(step_);
  }

  const std::vector<int>& params = fetch_set_[module];
  gather(params);
  for (int p : params) {
    st_.active[p].insert(module);
    if (st_.status[p] != ParamStatus::InFlight) continue;
    backend_.wait(p);
    const int call = st_.call[p];
    for (int q : st_.calls[call]) st_.status[q] = ParamStatus::Available;
    st_.calls.erase(call);
  }

  if (mode_ == Mode::Complete) {
    auto recent = [&](int p) {
      auto it = most_recent_.find(p);
      return it == most_recent_.end() ? kNeverFetched : it->second;
    };
    std::set<int> not_yet, discarded;
    for (int p : params)
      if (recent(p) < step_) not_yet.insert(p);
    while (!queue_.empty() && discarded.size() < not_yet.size()) {
      const Use u = queue_.front();
      queue_.pop_front();
      most_recent_[u.param] = u.step;
      discarded.insert(u.param);
    }
    if (discarded != not_yet)
      throw std::logic_error("stage 3: tracing error at step " + std::to_string(step_) +
                             " (module " + table_.modules()[module].name +
                             "): the parameter queue does not match the trace");
    if (z_.stage3_prefetch_bucket_size > 0) {
      const int64_t budget =
          std::min(z_.stage3_max_live_parameters - n_available_, z_.stage3_prefetch_bucket_size);
      std::vector<int> prefetch;
      std::set<int> chosen;
      int64_t numel = 0;
      while (!queue_.empty() && numel < budget) {
        const Use u = queue_.front();
        queue_.pop_front();
        const bool fresh =
            st_.status[u.param] == ParamStatus::NotAvailable && !chosen.count(u.param);
        most_recent_[u.param] = std::max(recent(u.param), u.step);
        if (fresh) {
          chosen.insert(u.param);
          prefetch.push_back(u.param);
          numel += static_cast<int64_t>(table_.params()[u.param].numel);
        }
      }
      if (numel > 0) gather(prefetch);
    }
    if (z_.offload_param.device == "nvme") read_ahead_nvme();
  }
  step_++;
}

void ParamGatherer::read_ahead_nvme() {
  int64_t in_flight = 0, considered = 0;
  for (const auto& kv : st_.calls)
    for (int p : kv.second) in_flight += static_cast<int64_t>(table_.params()[p].numel);
  std::vector<int> params;
  std::set<int> seen;
  for (const Use& u : queue_) {
    if (considered > 2 * in_flight ||
        static_cast<int64_t>(params.size()) >= z_.offload_param.buffer_count)
      break;
    if (st_.status[u.param] == ParamStatus::NotAvailable && !st_.secondary[u.param] &&
        seen.insert(u.param).second)
      params.push_back(u.param);
    considered += static_cast<int64_t>(table_.params()[u.param].numel);
  }
  if (!params.empty()) backend_.read_ahead(params);
}

std::set<int> ParamGatherer::params_to_release(int module) const {
  const std::vector<int>& params = fetch_set_[module];
  std::set<int> out;
  if (mode_ != Mode::Complete) {
    out.insert(params.begin(), params.end());
    return out;
  }
  for (int p : params) {
    auto it = most_recent_.find(p);
    const int64_t recent = it == most_recent_.end() ? kNeverFetched : it->second;
    if (!layout_.persistent(p) && recent <= step_) out.insert(p);
  }
  // DeepSpeed walks the trace from this step, counting elements, and keeps
  // every parameter it meets before stage3_max_reuse_distance. The walk meets
  // p iff the elements before p's next use are fewer than the distance, so
  // one lookup per parameter gives the same set without walking the trace
  // (a walk per release is quadratic in the modules).
  const auto start = static_cast<size_t>(step_);
  for (auto it = out.begin(); it != out.end();) {
    const std::vector<int64_t>& uses = trace_uses_[static_cast<size_t>(*it)];
    const auto next = std::lower_bound(uses.begin(), uses.end(), step_);
    if (next == uses.end()) {
      ++it;
      continue;
    }
    const int64_t walked =
        trace_elems_before_[static_cast<size_t>(*next)] - trace_elems_before_[start];
    it = walked < z_.stage3_max_reuse_distance ? out.erase(it) : std::next(it);
  }
  return out;
}

void ParamGatherer::release_param(int p) {
  if (st_.status[p] != ParamStatus::Available || !st_.active[p].empty()) return;
  st_.status[p] = ParamStatus::NotAvailable;
  n_available_ -= static_cast<int64_t>(table_.params()[p].numel);
  const bool keep = layout_.hpz() > 1;
  backend_.drop(p, keep);
  if (keep) st_.secondary[p] = true;
}

void ParamGatherer::release(int module, bool backward) {
  if (backward && !table_.modules()[module].inputs_need_grad) return;
  const std::set<int> to_release = params_to_release(module);
  for (int p : fetch_set_[module]) {
    st_.active[p].erase(module);
    if (to_release.count(p)) release_param(p);
  }
}

void ParamGatherer::index_trace() {
  trace_elems_before_.assign(module_order_.size() + 1, 0);
  trace_uses_.assign(table_.params().size(), {});
  for (size_t i = 0; i < module_order_.size(); i++) {
    int64_t elems = 0;
    for (int p : fetch_set_[module_order_[i]]) {
      elems += static_cast<int64_t>(table_.params()[p].numel);
      std::vector<int64_t>& uses = trace_uses_[static_cast<size_t>(p)];
      if (uses.empty() || uses.back() != static_cast<int64_t>(i))
        uses.push_back(static_cast<int64_t>(i));
    }
    trace_elems_before_[i + 1] = trace_elems_before_[i] + elems;
  }
}

void ParamGatherer::check_same_on_all_ranks(const std::vector<int64_t>& values) {
  // DeepSpeed 0.17.6 compares the lengths first (a broadcast of rank 0's).
  if (deepspeed_behaviours(z_.deepspeed_version).stage3_trace_check_sends_length) {
    const std::vector<int64_t> length{static_cast<int64_t>(values.size())};
    if (backend_.broadcast_from_rank0(length) != length)
      throw std::runtime_error(
          "stage 3: the ranks traced different numbers of modules (rank 0's differs from this "
          "rank's)");
  }
  if (backend_.broadcast_from_rank0(values) != values)
    throw std::runtime_error(
        "stage 3: the ranks traced different module orders (rank 0's differs from this rank's)");
}

void ParamGatherer::check_trace() {
  if (mode_ == Mode::Complete) return;
  check_same_on_all_ranks(std::vector<int64_t>(module_order_.begin(), module_order_.end()));
  // Nothing recorded yet (the first forward's check, DeepSpeed's initial
  // invalid trace): the ranks agree on the empty order and keep recording.
  if (mode_ == Mode::Record && !module_order_.empty()) {
    param_trace_.clear();
    for (int m : module_order_) {
      const int64_t at = fetched_at_[m].front();
      fetched_at_[m].pop_front();
      std::vector<int> params = fetch_set_[m];
      std::sort(params.begin(), params.end());
      for (int p : params) param_trace_.push_back({p, at});
    }
    std::vector<int64_t> ids, steps;
    for (const Use& u : param_trace_) {
      ids.push_back(u.param);
      steps.push_back(u.step);
    }
    check_same_on_all_ranks(ids);
    check_same_on_all_ranks(steps);
    mode_ = Mode::Complete;
    index_trace();
  } else {
    mode_ = Mode::Record;
  }
}

// DeepSpeed 0.19 (deepspeed_behaviours.h): what a backward left gathered (the
// embeddings and the root, which get no backward hook) is released too, so
// every forward gathers its first prefetch bucket afresh.
void ParamGatherer::release_backward_leftovers() {
  if (!deepspeed_behaviours(z_.deepspeed_version).stage3_regathers_first_bucket) return;
  for (size_t p = 0; p < table_.params().size(); p++)
    if (!layout_.persistent(static_cast<int>(p)) && st_.status[p] == ParamStatus::Available) {
      st_.active[p].clear();
      release_param(static_cast<int>(p));
    }
}

void ParamGatherer::restart_walk() {
  queue_.assign(param_trace_.begin(), param_trace_.end());
  most_recent_.clear();
  fetched_at_.clear();
  step_ = 0;
  n_available_ = 0;
}

void ParamGatherer::end_pass() {
  check_trace();
  release_backward_leftovers();
  restart_walk();
}

void ParamGatherer::start_forward() {
  forward_in_pass_ = true;
  if (!deepspeed_behaviours(z_.deepspeed_version).stage3_trace_check_in_forward) return;
  check_trace();
  restart_walk();
}

// A backward whose forward ran outside the pass (a pipeline's) is a pass of
// its own: it ends here under every release, or its trace, never checked at
// a forward's start, would never complete and no backward would prefetch.
void ParamGatherer::end_backward() {
  const bool had_forward = forward_in_pass_;
  forward_in_pass_ = false;
  if (!deepspeed_behaviours(z_.deepspeed_version).stage3_trace_check_in_forward || !had_forward) {
    end_pass();
    return;
  }
  release_backward_leftovers();
}

void ParamGatherer::release_all() {
  for (size_t p = 0; p < table_.params().size(); p++) {
    if (st_.status[p] == ParamStatus::InFlight)
      throw std::logic_error("stage 3: parameter " + table_.params()[p].name + " still in flight");
    st_.active[p].clear();
    release_param(static_cast<int>(p));
  }
}

void ParamGatherer::gather_persistent() {
  for (int p : layout_.persistent_params()) {
    backend_.gather({p}, GatherFrom::Persistent);
    backend_.wait(p);
    st_.status[p] = ParamStatus::Available;
  }
  if (layout_.hpz() > 1) {
    backend_.drop_secondaries();
    st_.secondary.assign(st_.secondary.size(), false);
  }
}

}  // namespace zt
