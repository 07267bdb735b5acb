// GPT's micro-step with the arithmetic replaced by timed waits, for
// throughput studies (docs/compute_emulation.md): every hook event of a real
// forward_backward fires, in the model's own order (GPT::training_events), so
// ZeRO gathers, releases, buckets and reduces exactly as it would; between
// the events the rank sleeps for the compute a real device would spend.
//
// Where the time goes is the step-time model's rule (zero/analysis/step_time_model.h):
// the forward takes forward_fraction of a micro-step and the backward the
// rest; within a pass, each module takes the share of the pass's parameter
// elements it owns. A module's share is spent right after its fetch returns
// (its parameters are there) and before anything it does next (its
// gradients become ready, its children run), so a fetch that waits for a
// gather delays the compute after it, as on a device. The waits sleep:
// a waiting rank leaves the cores to the ranks that communicate.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "model/module_hooks.h"
#include "model/param_table.h"
#include "model/recompute.h"

namespace zt {

// The stated durations an emulated run waits for, after system.emulate_time_scale.
struct EmulatedDurations {
  double micro_step_ms = 0;  // forward + backward of one micro-step
  double optimizer_ms = 0;   // the whole model's optimizer step; a rank waits its shard's share
  double forward_fraction = 1.0 / 3.0;
  double time_scale = 1;      // already applied to the two durations
  std::string source;         // "given in the config", or the summary.json they were measured in
  std::string source_device;  // the device that summary.json ran on; "" when given
};

class EmulatedGPT {
 public:
  // micro_step: forward + backward of one micro-step; forward_fraction in (0, 1).
  EmulatedGPT(const ParamTable& table, Recompute recompute, std::chrono::nanoseconds micro_step,
              double forward_fraction);

  // One micro-step's events against `hooks` with the waits between them.
  // No loss is computed: there is none to return.
  void forward_backward(ModuleHooks& hooks);
  // Its forward's events alone, and its backward's (a pipeline stage runs a
  // micro-batch's two passes apart).
  void forward(ModuleHooks& hooks);
  void backward(ModuleHooks& hooks);

  // The wait after each event (0 for all but the fetch of a module owning
  // parameters), in event order: what forward_backward sleeps, for tests.
  const std::vector<std::chrono::nanoseconds>& waits() const { return waits_; }
  const std::vector<ModuleEvent>& events() const { return events_; }

 private:
  // Events [begin, end), `device` carried from the events before.
  void replay(size_t begin, size_t end, std::chrono::steady_clock::time_point& device,
              ModuleHooks& hooks);
  std::vector<ModuleEvent> events_;
  std::vector<std::chrono::nanoseconds> waits_;
  size_t backward_begin_ = 0;  // the backward root's fetch
};

}  // namespace zt
