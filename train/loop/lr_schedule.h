// Learning-rate schedules. step counts optimizer steps from 0; total is train.steps.
//
// cosine (the default; llm.c / nanoGPT): linear warm-up from lr/warmup to lr over warmup
// steps, then cosine decay to min_lr at the last step.
//
// constant: lr at every step (DeepSpeed without a scheduler).
//
// DeepSpeed's schedulers (deepspeed/runtime/lr_schedules.py), exactly as DeepSpeed applies
// them: the scheduler starts at iteration -1 and steps after each optimizer step, so step s
// runs with iteration k = s - 1, and step 0 with the value current DeepSpeed's constructor
// sets (DeepSpeed 0.14 set none: its step 0 ran at the optimizer's lr). With
// W = max(2, warmup), T = total and the warm-up fraction g(k) = k/W (warmup_type linear) or
// ln(k+1)/ln(W) (log), for k < W:
//   warmup_lr        (WarmupLR):       k < 0: min_lr; k < W: min_lr + (lr - min_lr) g(k); then lr
//   warmup_decay_lr  (WarmupDecayLR):  as warmup_lr, then
//                                      min_lr + (lr - min_lr) max(0, (T - k) / max(1, T - W))
//   warmup_cosine_lr (WarmupCosineLR): k < 0: 0; k < W: start + (lr - start) g(k); then
//                                      min_lr + (lr - min_lr) (1 + cos(pi p)) / 2 with
//                                      p = min(1, (k - W + 1) / max(1, T - W))
// where warmup_lr's min_lr is DeepSpeed's warmup_min_lr and lr its warmup_max_lr;
// warmup_cosine_lr's lr is the optimizer's lr, start = warmup_min_ratio * lr and
// min_lr = cos_min_ratio * lr.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "train/config/config.h"

namespace zt {

inline double learning_rate(int step, int total_steps, int warmup, double lr, double min_lr) {
  if (step < warmup) return lr * (step + 1) / warmup;
  if (total_steps <= warmup + 1) return lr;
  const double progress = static_cast<double>(step - warmup) / (total_steps - 1 - warmup);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * std::min(1.0, progress)));
  return min_lr + cosine * (lr - min_lr);
}

// The schedule t.lr_schedule names, at optimizer step `step` of t.steps.
inline double learning_rate(const TrainConfig& t, int step) {
  const std::string& shape = t.lr_schedule;
  if (shape == "cosine") return learning_rate(step, t.steps, t.warmup_steps, t.lr, t.min_lr);
  if (shape == "constant") return t.lr;
  const double W = std::max(2, t.warmup_steps), T = t.steps, k = step - 1;
  const bool cosine = shape == "warmup_cosine_lr";
  const double start = cosine ? t.warmup_start_lr : t.min_lr;
  if (k < 0) return cosine ? 0.0 : start;
  if (k < W) {
    const double g = t.warmup_type == "log" ? std::log(k + 1) / std::log(W) : k / W;
    return start + (t.lr - start) * g;
  }
  if (shape == "warmup_decay_lr")
    return t.min_lr + (t.lr - t.min_lr) * std::max(0.0, (T - k) / std::max(1.0, T - W));
  if (cosine) {
    const double p = std::min(1.0, (k - W + 1) / std::max(1.0, T - W));
    return t.min_lr + (t.lr - t.min_lr) * (1 + std::cos(3.141592653589793 * p)) / 2;
  }
  return t.lr;  // warmup_lr after the warm-up
}

}  // namespace zt
