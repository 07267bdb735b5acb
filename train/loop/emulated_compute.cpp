#include "train/loop/emulated_compute.h"

#include "train/config/network_file.h"

namespace zt {

std::string switch_off_model_outputs(bool resume, bool init_from, TrainConfig& t) {
  if (resume || init_from)
    throw ConfigError(std::string(resume ? "--resume" : "--init-from") +
                      ": system.compute: emulate trains no weights, so it neither loads nor "
                      "continues any (use system.compute: real)");
  const bool any =
      t.eval_every > 0 || t.sample_every > 0 || t.hellaswag_every > 0 || t.checkpoint_every > 0;
  t.eval_every = t.sample_every = t.hellaswag_every = t.checkpoint_every = 0;
  return any ? "system.compute: emulate: no model runs, so evaluation, samples, HellaSwag and "
               "checkpoints are off"
             : "";
}

EmulatedDurations emulated_durations(const Config& cfg) {
  const SystemConfig& s = cfg.system;
  EmulatedDurations d;
  d.forward_fraction = s.emulate_forward_fraction;
  d.time_scale = s.emulate_time_scale;
  if (s.emulate_from.empty()) {
    d.micro_step_ms = s.emulate_micro_step_ms;
    d.optimizer_ms = s.emulate_optimizer_ms;
    d.source = "stated in the config";
  } else {
    const ComputeTimes measured = read_compute_times(s.emulate_from);
    const std::string wanted = compute_shape(cfg.model, cfg.train.micro_batch);
    if (!measured.measured_for.empty() && measured.measured_for != wanted)
      throw ConfigError("system.emulate_from " + s.emulate_from + ": measured for " +
                        measured.measured_for + ", this run is " + wanted +
                        "; a micro-step's time does not transfer between shapes (measure this "
                        "one, or give system.emulate_micro_step_ms)");
    d.micro_step_ms = measured.micro_step_s * 1e3;
    d.optimizer_ms = measured.optimizer_s * 1e3;
    d.source = measured.source;
    d.source_device = summary_device(s.emulate_from);
  }
  d.micro_step_ms *= d.time_scale;
  d.optimizer_ms *= d.time_scale;
  return d;
}

double optimizer_wait_ms(const EmulatedDurations& d, size_t updated_elements, size_t model_params) {
  if (model_params == 0) return 0;
  return d.optimizer_ms * static_cast<double>(updated_elements) / static_cast<double>(model_params);
}

}  // namespace zt
