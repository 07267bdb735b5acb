// Linear warm-up from lr/warmup to lr over warmup_steps, then cosine decay to
// min_lr at the last step (llm.c / nanoGPT practice). step counts from 0.
#pragma once
#include <cmath>

namespace zt {

inline double learning_rate(int step, int total_steps, int warmup, double lr, double min_lr) {
  if (step < warmup) return lr * (step + 1) / warmup;
  if (total_steps <= warmup + 1) return lr;
  const double progress = static_cast<double>(step - warmup) / (total_steps - 1 - warmup);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * std::min(1.0, progress)));
  return min_lr + cosine * (lr - min_lr);
}

}  // namespace zt
