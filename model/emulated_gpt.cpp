#include "model/emulated_gpt.h"

#include <sys/prctl.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "model/compute_places.h"
#include "model/gpt.h"

namespace zt {

EmulatedGPT::EmulatedGPT(const ParamTable& table, Recompute recompute,
                         std::chrono::nanoseconds micro_step, double forward_fraction, Ops* ops,
                         size_t tokens)
    : events_(GPT::training_events(table, recompute)), waits_(events_.size()) {
  if (!(forward_fraction > 0 && forward_fraction < 1))
    throw std::invalid_argument("EmulatedGPT: forward_fraction must be in (0, 1)");
  if (table.split().degree > 1) {
    if (!ops || tokens == 0)
      throw std::invalid_argument("EmulatedGPT: a tensor-parallel shard needs ops and tokens");
    combines_ = GPT::combine_points(table, recompute);
    tokens_ = tokens;
    width_ = static_cast<size_t>(table.config().n_embd);
    ops_ = ops;
    const size_t bytes = tokens_ * width_ * sizeof(float);  // fp32 or the model dtype: at most 4
    combine_buffer_ = ops_->alloc(bytes, MemCategory::Activations);
    ops_->memzero(combine_buffer_, bytes);
  }
  // Each module's share of its pass, after its fetch (model/compute_places.h).
  const ComputePlaces places = compute_places(table, events_);
  const double pass_ns[2] = {micro_step.count() * forward_fraction,
                             micro_step.count() * (1 - forward_fraction)};
  for (size_t i = 0; i < events_.size(); i++)
    waits_[i] = std::chrono::nanoseconds(
        static_cast<int64_t>(pass_ns[places.backward[i]] * places.share[i]));
  for (size_t i = 0; i < events_.size() && backward_begin_ == 0; i++)
    if (events_[i].kind == ModuleEvent::Fetch && events_[i].backward &&
        table.modules()[events_[i].index].is_root())
      backward_begin_ = i;
  // The default 50 us of timer slack per sleep would add up over a pass's modules.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

EmulatedGPT::~EmulatedGPT() {
  if (combine_buffer_) ops_->release(combine_buffer_);
}

void EmulatedGPT::combine_before(size_t i, ModuleHooks& hooks) {
  auto it = std::lower_bound(combines_.begin(), combines_.end(), i,
                             [](const CombinePoint& c, size_t at) { return c.before_event < at; });
  for (; it != combines_.end() && it->before_event == i; ++it)
    hooks.combine(it->module, it->backward, it->what, combine_buffer_, it->count(tokens_, width_));
}

// `device` is when the emulated device finishes its queued compute. A hook's
// own time is added to it (a fetch waiting for a gather, a gradient hook
// waiting for a reduce without overlap_comm: the device would wait too), a
// late wake-up is not, so sleeping never drifts from the stated durations.
void EmulatedGPT::replay(size_t begin, size_t end, std::chrono::steady_clock::time_point& device,
                         ModuleHooks& hooks) {
  using Clock = std::chrono::steady_clock;
  for (size_t i = begin; i < end; i++) {
    const ModuleEvent& e = events_[i];
    const Clock::time_point hook_start = Clock::now();
    combine_before(i, hooks);
    switch (e.kind) {
      case ModuleEvent::Fetch: hooks.fetch(e.index, e.backward); break;
      case ModuleEvent::Release: hooks.release(e.index, e.backward); break;
      case ModuleEvent::GradReady:
        hooks.grad(e.index);
        hooks.grad_ready(e.index);
        break;
    }
    device += (Clock::now() - hook_start) + waits_[i];
    if (waits_[i].count() > 0) std::this_thread::sleep_until(device);
  }
  if (end == events_.size()) combine_before(end, hooks);
}

void EmulatedGPT::forward_backward(ModuleHooks& hooks) {
  std::chrono::steady_clock::time_point device = std::chrono::steady_clock::now();
  replay(0, events_.size(), device, hooks);
}

void EmulatedGPT::forward(ModuleHooks& hooks) {
  std::chrono::steady_clock::time_point device = std::chrono::steady_clock::now();
  replay(0, backward_begin_, device, hooks);
}

void EmulatedGPT::backward(ModuleHooks& hooks) {
  std::chrono::steady_clock::time_point device = std::chrono::steady_clock::now();
  replay(backward_begin_, events_.size(), device, hooks);
}

}  // namespace zt
