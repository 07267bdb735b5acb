// The HF Trainer's "auto" rules (see hf_auto_values.h for the source and its versions).
#include "train/deepspeed/hf_auto_values.h"

#include <algorithm>
#include <cstdint>

#include "data/input/input_scalar.h"

namespace zt {

std::string HfAutoValue::text() const {
  if (boolean) return numbers[0] != 0 ? "true" : "false";
  if (numbers.size() == 1) return format_double(numbers[0]);
  std::string s;
  for (double x : numbers) s += (s.empty() ? "[" : ", ") + format_double(x);
  return s + "]";
}

std::optional<HfAutoValue> hf_auto_value(const std::string& key, const Config& c, int world,
                                         int stage) {
  const TrainConfig& t = c.train;
  const double hidden = double(c.model.n_embd);
  auto one = [](double x, std::string source) { return HfAutoValue{{x}, std::move(source)}; };
  // trainer_config_process: TrainingArguments.
  if (key == "train_micro_batch_size_per_gpu")
    return one(t.micro_batch, "train.micro_batch (per_device_train_batch_size)");
  if (key == "gradient_accumulation_steps")
    return one(grad_accum_steps(c, world),
               "the accumulation of train.global_batch_tokens (gradient_accumulation_steps)");
  if (key == "train_batch_size")  // world * per-device batch * accumulation
    return one(double(t.global_batch_tokens / c.model.seq_len),
               "train.global_batch_tokens / seq_len (world * micro * accumulation)");
  if (key == "gradient_clipping") return one(t.grad_clip, "train.grad_clip (max_grad_norm)");
  if (key == "optimizer.params.lr") return one(t.lr, "train.lr (learning_rate)");
  if (key == "optimizer.params.betas")
    return HfAutoValue{{t.beta1, t.beta2}, "train.beta1, train.beta2 (adam_beta1, adam_beta2)"};
  if (key == "optimizer.params.eps") return one(t.eps, "train.eps (adam_epsilon)");
  if (key == "optimizer.params.weight_decay")
    return one(t.weight_decay, "train.weight_decay (weight_decay)");
  if (key == "scheduler.params.warmup_min_lr") return one(0, "0 (the Trainer's constant)");
  if (key == "scheduler.params.warmup_max_lr") return one(t.lr, "train.lr (learning_rate)");
  // fp16/bf16: the Trainer's --fp16 / --bf16; zerotrain has no fp16 mode and trains in bf16 on
  // the GPU, the device it is run for.
  if (key == "fp16.enabled" || key == "bf16.enabled") {
    HfAutoValue v = key == "bf16.enabled" ? one(1, "true (zerotrain trains in bf16 on the GPU)")
                                          : one(0, "false (zerotrain has no fp16 mode)");
    v.boolean = true;
    return v;
  }
  // trainer_config_finalize: the model's hidden size and the step count.
  if (key == "zero_optimization.reduce_bucket_size")
    return one(hidden * hidden, "n_embd^2 (hidden_size^2)");
  if (key == "zero_optimization.stage3_prefetch_bucket_size" && stage == 3)
    // Python's int(0.9 * h * h): (0.9 * h) * h in doubles, truncated.
    return one(double(int64_t(0.9 * hidden * hidden)), "int(0.9 * n_embd^2)");
  if (key == "zero_optimization.stage3_param_persistence_threshold" && stage == 3)
    return one(10 * hidden, "10 * n_embd");
  if (key == "scheduler.params.total_num_steps")
    return one(t.steps, "train.steps (num_training_steps)");
  if (key == "scheduler.params.warmup_num_steps")
    return one(std::max(1, t.warmup_steps), "max(1, train.warmup_steps) (warmup_steps)");
  return std::nullopt;
}

}  // namespace zt
