// system.compute: emulate, resolved: the durations a run waits for
// (system.emulate_micro_step_ms and _optimizer_ms as given, or a summary.json's
// measured timing), after system.emulate_time_scale.
#pragma once
#include <string>

#include "model/emulated_gpt.h"
#include "train/config/config.h"

namespace zt {

// Emulation runs no model, so nothing is evaluated, sampled, scored or
// checkpointed: switches those off in `t` and returns a note saying so when
// any was on ("" otherwise). Throws ConfigError for --resume or --init-from
// (`resume`, `init_from`): emulation trains no weights to load or continue.
std::string switch_off_model_outputs(bool resume, bool init_from, TrainConfig& t);

// Throws ConfigError naming the file and what differs when emulate_from was
// measured for another model or micro-batch than cfg's.
EmulatedDurations emulated_durations(const Config& cfg);

// The time one rank's optimizer step waits: the whole model's duration times
// the share of the model's parameters the rank updates (all at stage 0, its
// shard at stages 1-3).
double optimizer_wait_ms(const EmulatedDurations& d, size_t updated_elements, size_t model_params);

}  // namespace zt
