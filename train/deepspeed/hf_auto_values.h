// The HF Trainer's rules for "auto" in a ds_config, in one place, with zerotrain's config
// standing in for the Trainer's arguments (train.deepspeed_auto: hf).
//
// Read from transformers 4.45.0 and 5.23.0, src/transformers/integrations/deepspeed.py,
// HfTrainerDeepSpeedConfig: trainer_config_process fills the batch sizes, gradient_clipping,
// the optimizer's lr/betas/eps/weight_decay, the scheduler's warmup_min_lr (always 0) and
// warmup_max_lr, and fp16/bf16 "enabled"; trainer_config_finalize fills, from the model's
// hidden_size h, zero_optimization.reduce_bucket_size = h*h and, at stage 3 only,
// stage3_prefetch_bucket_size = int(0.9*h*h) and stage3_param_persistence_threshold = 10*h,
// then total_num_steps and warmup_num_steps. Each rule looks up the key under exactly that
// name (the field-name aliases such as prefetch_bucket_size are not filled). Differences
// between the two versions, and before them:
//   - transformers before 4.45.0 passed 0.9*h*h as a float; DeepSpeed from 0.15.0 (pydantic 2)
//     refuses a fractional float for that integer field, hence int() (transformers PR 33402).
//   - 5.23.0 fills warmup_num_steps with max(1, warmup steps), since DeepSpeed 0.19.6 refuses 0;
//     4.45.0 filled the warmup steps as they were. zerotrain follows 5.23.0.
//   - 4.45.0 also filled amp.enabled / amp.opt_level (apex); 5.23.0 has no amp rule.
// Any other "auto" is left in place by the Trainer and reaches DeepSpeed as it is.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "train/config/config.h"

namespace zt {

// transformers releases whose HfTrainerDeepSpeedConfig these rules were read from.
inline constexpr const char* kHfTrainerVersionsRead = "transformers 4.45.0-5.23.0";

struct HfAutoValue {
  std::vector<double> numbers;  // one number; two for optimizer.params.betas
  std::string source;           // what stands in for the Trainer's argument, for messages
  bool boolean = false;         // fp16/bf16 "enabled": numbers[0] is 0 or 1
  // "16384", "true", or "[0.9, 0.95]" for betas.
  std::string text() const;
};

// What the Trainer writes for "auto" at `key` (dotted, as spelled in the ds_config, e.g.
// "optimizer.params.lr"), zerotrain's `c` standing in for its arguments and n_embd for the
// model's hidden_size, on `world` ranks at ZeRO `stage`. nullopt: the Trainer has no rule for
// that key (the stage-3 keys below stage 3 included) and leaves "auto" in place.
std::optional<HfAutoValue> hf_auto_value(const std::string& key, const Config& c, int world,
                                         int stage);

}  // namespace zt
