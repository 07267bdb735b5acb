// Formulas held to numbers worked out by hand, never to the code under test:
//  - learning_rate(): the default cosine schedule and DeepSpeed's WarmupLR,
//    WarmupDecayLR and WarmupCosineLR (train/loop/lr_schedule.h) at the warm-up's
//    start and end, inside the decay and at the last step, for lr 6e-4,
//    min_lr 6e-5, warm-up 10, 100 steps;
//  - clip_scale() on both sides of the threshold;
//  - a whole optimizer step of every stage's engine applies the clip: from
//    gradients of known size, AdamW's first and second moments after one step
//    are (1 - beta1) * c * g and (1 - beta2) * (c * g)^2 with c the clip
//    coefficient, so an inverted (norm / clip) or dropped clip fails; the
//    update itself cannot show it (AdamW is scale invariant up to eps).
// Every expected value is a literal; the comment beside it gives the arithmetic
// (evaluated with /usr/bin/python3 in double precision).
#include <cmath>
#include <memory>
#include <vector>

#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/support_zero.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/loop/lr_schedule.h"
#include "zero/comm/communicators.h"
#include "zero/layout/param_groups.h"
#include "zero/stages/engine.h"
#include "zero/stages/replicated_params.h"

namespace zt {
namespace {

// 1e-12 relative: the literals carry 16-17 significant digits.
bool near(double got, double want) { return std::fabs(got - want) <= 1e-12 * std::fabs(want); }

TrainConfig schedule(const std::string& shape, const std::string& warmup_type = "linear") {
  TrainConfig t;
  t.lr_schedule = shape;
  t.warmup_type = warmup_type;
  t.lr = 6e-4;
  t.min_lr = 6e-5;
  t.warmup_steps = 10;
  t.steps = 100;
  t.warmup_start_lr = 6e-6;
  return t;
}

}  // namespace

TEST_CASE("learning_rate: the default cosine schedule at hand-computed steps", "[expected]") {
  const TrainConfig t = schedule("cosine");
  // Warm-up from lr/warmup: step s < 10 runs at 6e-4 * (s + 1) / 10.
  CHECK(near(learning_rate(t, 0), 6e-5));  // 6e-4 * 1 / 10
  CHECK(near(learning_rate(t, 4), 3e-4));  // 6e-4 * 5 / 10
  CHECK(near(learning_rate(t, 9), 6e-4));  // 6e-4 * 10 / 10: the warm-up's last step is at lr
  // Cosine from step 10 (progress 0) to the last step 99 (progress (99-10)/(100-1-10) = 1).
  CHECK(near(learning_rate(t, 10), 6e-4));  // 6e-5 + 0.5 * (1 + cos 0) * 5.4e-4
  // progress 40/89: 6e-5 + 0.5 * (1 + cos(pi * 40/89)) * 5.4e-4
  CHECK(near(learning_rate(t, 50), 0.000372707906327962));
  CHECK(near(learning_rate(t, 99), 6e-5));  // 6e-5 + 0.5 * (1 + cos pi) * 5.4e-4 = min_lr
  // The same through the five-argument form the trainer's cosine path calls.
  CHECK(near(learning_rate(0, 100, 10, 6e-4, 6e-5), 6e-5));
  CHECK(near(learning_rate(99, 100, 10, 6e-4, 6e-5), 6e-5));
}

TEST_CASE("learning_rate: DeepSpeed's schedulers at hand-computed steps", "[expected]") {
  // DeepSpeed steps the scheduler after each optimizer step, from iteration -1:
  // step s runs with iteration k = s - 1. W = 10 warm-up iterations, T = 100.
  SECTION("warmup_lr (WarmupLR), linear") {
    const TrainConfig t = schedule("warmup_lr");
    CHECK(near(learning_rate(t, 0), 6e-5));      // k = -1: warmup_min_lr
    CHECK(near(learning_rate(t, 1), 6e-5));      // k = 0: 6e-5 + 5.4e-4 * 0/10
    CHECK(near(learning_rate(t, 6), 3.3e-4));    // k = 5: 6e-5 + 5.4e-4 * 5/10
    CHECK(near(learning_rate(t, 10), 5.46e-4));  // k = 9: 6e-5 + 5.4e-4 * 9/10
    CHECK(near(learning_rate(t, 11), 6e-4));     // k = 10: warm-up over, warmup_max_lr
    CHECK(near(learning_rate(t, 99), 6e-4));     // last step: still warmup_max_lr
  }
  SECTION("warmup_lr (WarmupLR), log") {
    const TrainConfig t = schedule("warmup_lr", "log");
    CHECK(near(learning_rate(t, 1), 6e-5));  // k = 0: ln(1)/ln(10) = 0
    // k = 4: 6e-5 + 5.4e-4 * ln(5)/ln(10)
    CHECK(near(learning_rate(t, 5), 0.00043744380234145004));
    CHECK(near(learning_rate(t, 11), 6e-4));
  }
  SECTION("warmup_decay_lr (WarmupDecayLR)") {
    const TrainConfig t = schedule("warmup_decay_lr");
    CHECK(near(learning_rate(t, 0), 6e-5));      // k = -1
    CHECK(near(learning_rate(t, 10), 5.46e-4));  // k = 9: 6e-5 + 5.4e-4 * 9/10
    // After the warm-up: 6e-5 + 5.4e-4 * (T - k) / (T - W).
    CHECK(near(learning_rate(t, 11), 6e-4));                    // k = 10: 90/90
    CHECK(near(learning_rate(t, 55), 0.00033599999999999993));  // k = 54: 46/90
    CHECK(near(learning_rate(t, 99), 7.2e-5));                  // k = 98: 2/90 -> 6e-5 + 1.2e-5
  }
  SECTION("warmup_cosine_lr (WarmupCosineLR)") {
    const TrainConfig t = schedule("warmup_cosine_lr");
    CHECK(learning_rate(t, 0) == 0.0);            // k = -1: DeepSpeed's ratio 0
    CHECK(near(learning_rate(t, 1), 6e-6));       // k = 0: the warm-up's start
    CHECK(near(learning_rate(t, 10), 5.406e-4));  // k = 9: 6e-6 + (6e-4 - 6e-6) * 9/10
    // After the warm-up: 6e-5 + 5.4e-4 * (1 + cos(pi p)) / 2, p = (k - W + 1) / (T - W).
    CHECK(near(learning_rate(t, 11), 0.0005998355232951559));   // k = 10: p = 1/90
    CHECK(near(learning_rate(t, 55), 0.00032999999999999994));  // k = 54: p = 45/90, cos = 0
    CHECK(near(learning_rate(t, 99), 6.0164476704844146e-05));  // k = 98: p = 89/90
  }
  SECTION("warmup_cosine_lr (WarmupCosineLR), log") {
    const TrainConfig t = schedule("warmup_cosine_lr", "log");
    // k = 4: 6e-6 + (6e-4 - 6e-6) * ln(5)/ln(10)
    CHECK(near(learning_rate(t, 5), 0.00042118818257559507));
  }
  SECTION("constant") {
    const TrainConfig t = schedule("constant");
    CHECK(learning_rate(t, 0) == 6e-4);
    CHECK(learning_rate(t, 99) == 6e-4);
  }
}

TEST_CASE("clip_scale: 1 up to the threshold, clip / (norm + 1e-6) above it", "[expected]") {
  CHECK(clip_scale(0.5, 1.0) == 1.0f);  // below: no clipping
  CHECK(clip_scale(1.0, 1.0) == 1.0f);  // at the threshold: no clipping
  CHECK(clip_scale(1e9, 0.0) == 1.0f);  // clip 0 turns clipping off
  // Above: the float nearest clip / (norm + 1e-6).
  CHECK(clip_scale(2.0, 1.0) == static_cast<float>(0.499999750000125));   // 1 / 2.000001
  CHECK(clip_scale(3.0, 1.5) == static_cast<float>(0.4999998333333889));  // 1.5 / 3.000001
  // Just above the threshold the 1e-6 still counts: 1 / (1.0000001 + 1e-6).
  CHECK(clip_scale(1.0000001, 1.0) == static_cast<float>(0.9999989000012101));
}

// One micro-step of a 1-layer GPT whose every gradient element is +-0.25 (by
// the parity of its flat index), fed to a stage's engine through the model's
// own event order, then one AdamW step with beta1 = 0.5, beta2 = 0.75 (exact
// in fp32). The model has 1048 parameters:
//   wte 16*8 = 128, wpe 4*8 = 32, ln_1 16, c_attn 24*8 + 24 = 216,
//   c_proj 8*8 + 8 = 72, ln_2 16, c_fc 32*8 + 32 = 288, mlp c_proj 8*32 + 8 = 264,
//   ln_f 16: 128 + 32 + 872 + 16 = 1048,
// so the gradient norm is 0.25 * sqrt(1048) = sqrt(65.5) = 8.093207028119323.
TEST_CASE("every stage's step scales the gradient by the clip coefficient", "[expected]") {
  const GPTConfig shape = gpt_shape(1, 2, 8, 16, 4);
  const ParamTable table(shape);
  REQUIRE(table.total() == 1048);
  std::vector<float> w(table.total());
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.01f * static_cast<float>(i % 13);
  auto g_at = [](size_t flat) { return (flat & 1) ? -0.25f : 0.25f; };

  struct Case {
    double clip;
    double m_abs;  // |m| = (1 - beta1) * coef * 0.25
    double v;      // v = (1 - beta2) * (coef * 0.25)^2
  };
  const Case cases[] = {
      // clip 1 < 8.0932...: coef = 1 / (8.093207028119323 + 1e-6) = 0.12356039737586941;
      // m = 0.5 * 0.25 * coef, v = 0.25 * (0.25 * coef)^2.
      {1.0, 0.015445049671983676, 0.00023854955937004305},
      // clip 10 > norm: coef 1; m = 0.5 * 0.25 = 0.125, v = 0.25 * 0.0625 = 0.015625.
      {10.0, 0.125, 0.015625},
  };
  for (const Case& c : cases) {
    for (int stage = 0; stage <= 3; stage++) {
      INFO("clip " << c.clip << ", stage " << stage);
      std::unique_ptr<Ops> ops = make_cpu_ops();
      REQUIRE(ops->dtype() == DType::F32);
      std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
      ZeroConfig z;
      z.stage = stage;
      const ZeroSetup s = engine_setup(z, table, c.clip);
      std::unique_ptr<ZeroEngine> engine = make_zero_engine(s, table, *ops, *comm);
      engine->init_weights(w.data());
      // The model's events, with each gradient written just before it is reported.
      engine->begin_micro_step(0, 1);
      for (const ModuleEvent& e : s.events) {
        if (e.kind == ModuleEvent::Fetch) {
          engine->fetch(e.index, e.backward);
        } else if (e.kind == ModuleEvent::Release) {
          engine->release(e.index, e.backward);
        } else {
          const ParamInfo& p = table.params()[e.index];
          std::vector<float> g(p.numel);
          for (size_t j = 0; j < p.numel; j++) g[j] = g_at(p.offset + j);
          ops->from_host(engine->grad(e.index), g.data(), p.numel * sizeof(float));
          engine->grad_ready(e.index);
        }
      }
      engine->end_micro_step();
      const double norm = engine->step(OptimSettings{1e-3f, 0.5f, 0.75f, 1e-8f, 0.0f}, 1);
      CHECK(norm == Approx(8.093207028119323).epsilon(1e-6));  // fp32 scalar reduction

      std::vector<float> master, m, v;
      engine->optimizer().save_state(master, m, v);
      size_t wrong_m = 0, wrong_v = 0, seen = 0;
      for (const OptimPiece& p : engine->optimizer().pieces())
        for (size_t j = 0; j < p.n; j++) {
          const double sign = g_at(p.flat_begin + j) > 0 ? 1.0 : -1.0;
          wrong_m += std::fabs(m[p.shard_offset + j] - sign * c.m_abs) > 2e-7 * c.m_abs;
          wrong_v += std::fabs(v[p.shard_offset + j] - c.v) > 5e-7 * c.v;
          seen++;
        }
      CHECK(seen == table.total());
      CHECK(wrong_m == 0);
      CHECK(wrong_v == 0);
      INFO("m[0] = " << m[engine->optimizer().pieces()[0].shard_offset]);
      CHECK(std::fabs(m[engine->optimizer().pieces()[0].shard_offset]) ==
            Approx(c.m_abs).epsilon(2e-7));
    }
  }
}

}  // namespace zt
