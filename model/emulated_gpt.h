// GPT's micro-step with the arithmetic replaced by timed waits, for
// throughput studies (docs/compute_emulation.md): every hook event of a real
// forward_backward fires, in the model's own order (GPT::training_events), so
// ZeRO gathers, releases, buckets and reduces exactly as it would; between
// the events the rank sleeps for the compute a real device would spend.
//
// Where the time goes is the step-time model's rule (zero/analysis/step_time_model.h):
// the forward takes forward_fraction of a micro-step and the backward the
// rest; within a pass, each module's share is spent right after its fetch
// returns (model/compute_places.h, which the model places its calls by), so
// a fetch that waits for a gather delays the compute after it, as on a
// device. The waits sleep: a waiting rank leaves the cores to the ranks that
// communicate.
//
// A tensor-parallel shard (its table split) also makes every combine the
// real shard makes (GPT::combine_points), at its place among the events,
// over a real-size buffer of zeros: the tensor group's all-reduces run as in
// training, each on the critical path as on a device.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "model/module_hooks.h"
#include "model/ops.h"
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
  // A split table needs `ops` for the combines' buffer and the micro-batch's
  // `tokens` (B x T) for their sizes.
  EmulatedGPT(const ParamTable& table, Recompute recompute, std::chrono::nanoseconds micro_step,
              double forward_fraction, Ops* ops = nullptr, size_t tokens = 0);
  ~EmulatedGPT();
  EmulatedGPT(const EmulatedGPT&) = delete;
  EmulatedGPT& operator=(const EmulatedGPT&) = delete;

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
  // The combines placed before event i (i = events_.size(): after the last).
  void combine_before(size_t i, ModuleHooks& hooks);
  std::vector<ModuleEvent> events_;
  std::vector<std::chrono::nanoseconds> waits_;
  size_t backward_begin_ = 0;           // the backward root's fetch
  std::vector<CombinePoint> combines_;  // in order; empty for an unsplit table
  size_t tokens_ = 0, width_ = 0;
  Ops* ops_ = nullptr;
  void* combine_buffer_ = nullptr;  // tokens x width x 4 bytes, zeros
};

}  // namespace zt
