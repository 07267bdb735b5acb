// The learning-rate schedules: zerotrain's default and DeepSpeed's three schedulers, each
// held to DeepSpeed's own arithmetic (deepspeed/runtime/lr_schedules.py) as DeepSpeed applies
// it: the scheduler starts at iteration -1 and steps after every optimizer step.
#include <cmath>
#include <string>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/loop/lr_schedule.h"

namespace zt {
namespace {

// DeepSpeed's schedulers, transcribed: the lr its get_lr() returns at last_batch_iteration k.
struct DeepSpeedScheduler {
  std::string type;  // WarmupLR, WarmupDecayLR, WarmupCosineLR
  double min_lr, max_lr, org_lr, warmup_min_ratio, cos_min_ratio;
  int warmup_num_steps, total_num_steps;
  bool log;

  double at(int k) const {
    const double W = std::max(2, warmup_num_steps);
    if (type == "WarmupCosineLR") {
      if (k < 0) return 0.0;
      double ratio;
      if (k < W) {
        ratio = log ? std::log(k + 1.0) / std::log(W) : k / W;
        ratio = warmup_min_ratio + ratio * (1 - warmup_min_ratio);
      } else {
        double real_last = k - W + 1, real_total = std::max(1.0, total_num_steps - W);
        double progress = std::min(1.0, real_last / real_total);
        ratio = std::max(0.0,
                         cos_min_ratio + (1 - cos_min_ratio) * (1 + std::cos(M_PI * progress)) / 2);
      }
      return org_lr * ratio;
    }
    if (k < 0) return min_lr;
    double gamma = 1.0;
    if (k < W) gamma = log ? std::log(k + 1.0) / std::log(W) : k / W;
    else if (type == "WarmupDecayLR")
      gamma = std::max(0.0, (total_num_steps - k) / std::max(1.0, total_num_steps - W));
    return min_lr + (max_lr - min_lr) * gamma;
  }
};

}  // namespace

TEST_CASE("DeepSpeed's schedulers: train.lr_schedule gives DeepSpeed's lr at every step",
          "[config]") {
  std::mt19937_64 rng(test_seed());
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * double(rng() % 1000000) / 1e6;
  };
  for (const char* type : {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"}) {
    for (int trial = 0; trial < 20; ++trial) {
      DeepSpeedScheduler ds{type,
                            uniform(0, 1e-4),
                            uniform(2e-4, 1e-2),
                            uniform(2e-4, 1e-2),
                            uniform(0, 0.5),
                            uniform(0, 0.5),
                            1 + int(rng() % 30),
                            1 + int(rng() % 80),
                            rng() % 2 == 0};
      TrainConfig t;
      t.steps = ds.total_num_steps;
      t.warmup_steps = ds.warmup_num_steps;
      t.warmup_type = ds.log ? "log" : "linear";
      if (ds.type == "WarmupCosineLR") {
        t.lr_schedule = "warmup_cosine_lr";
        t.lr = ds.org_lr;
        t.warmup_start_lr = ds.warmup_min_ratio * ds.org_lr;
        t.min_lr = ds.cos_min_ratio * ds.org_lr;
      } else {
        t.lr_schedule = ds.type == "WarmupLR" ? "warmup_lr" : "warmup_decay_lr";
        t.lr = ds.max_lr;
        t.min_lr = ds.min_lr;
      }
      INFO(type << " warmup " << ds.warmup_num_steps << " total " << ds.total_num_steps
                << (ds.log ? " log" : " linear"));
      for (int step = 0; step < t.steps + 5; ++step) {
        INFO("step " << step);
        REQUIRE(learning_rate(t, step) == Approx(ds.at(step - 1)).epsilon(1e-12).margin(1e-18));
      }
    }
  }
}

TEST_CASE("the default cosine schedule and constant are unchanged by the config form", "[config]") {
  std::mt19937_64 rng(test_seed());
  TrainConfig t;
  t.steps = 10 + int(rng() % 100);
  t.warmup_steps = int(rng() % 10);
  for (int step = 0; step < t.steps; ++step)
    REQUIRE(learning_rate(t, step) == learning_rate(step, t.steps, t.warmup_steps, t.lr, t.min_lr));
  t.lr_schedule = "constant";
  for (int step = 0; step < t.steps; ++step) REQUIRE(learning_rate(t, step) == t.lr);
}

}  // namespace zt
