// Compute emulation (model/emulated_gpt.h): the emulated micro-step fires the
// hook events a real forward_backward fires, in the same order (a pipeline
// stage's forward and backward apart), and waits the stated time, split as
// the step-time model splits it.
#include <chrono>
#include <numeric>
#include <vector>

#include "model/emulated_gpt.h"
#include "model/gpt.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/loop/emulated_compute.h"
#include "train/loop/init_weights.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {
namespace {

using std::chrono::nanoseconds;

bool same(const ModuleEvent& a, const ModuleEvent& b) {
  return a.kind == b.kind && a.backward == b.backward && a.index == b.index;
}

// Counts grad() calls too: an engine may set up a gradient's space there.
struct CountingHooks : FlatHooks {
  using FlatHooks::FlatHooks;
  void* grad(int param) override {
    grads_asked.push_back(param);
    return FlatHooks::grad(param);
  }
  std::vector<int> grads_asked;
};

}  // namespace

TEST_CASE("emulation fires the real model's events in the real order", "[emulation]") {
  for (Recompute r : {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block}) {
    const ParamTable table(gpt_shape(3, 2, 16, 29, 6));
    const std::vector<ModuleEvent> real = forward_backward_events(table, r);
    auto ops = make_cpu_ops();
    CountingHooks hooks(table, *ops);
    std::vector<float> w(table.total(), 0.0f);
    hooks.set_params(w);
    EmulatedGPT emulated(table, r, nanoseconds(0), 1.0 / 3.0);
    emulated.forward_backward(hooks);
    INFO("recompute " << recompute_name(r));
    REQUIRE(hooks.events.size() == real.size());
    for (size_t i = 0; i < real.size(); i++) {
      INFO("event " << i);
      CHECK(same(hooks.events[i], real[i]));
    }
    // Each gradient's space is asked for before it is declared ready.
    std::vector<int> ready;
    for (const ModuleEvent& e : real)
      if (e.kind == ModuleEvent::GradReady) ready.push_back(e.index);
    CHECK(hooks.grads_asked == ready);
  }
}

TEST_CASE("a pipeline stage's emulated passes fire its real forward's, then backward's, events",
          "[emulation]") {
  const GPTConfig c = gpt_shape(4, 2, 16, 29, 6);
  for (Recompute r : {Recompute::None, Recompute::Block})
    for (int s = 0; s < 3; s++) {
      const StageBlocks b = split_blocks(c.n_layer, 3)[static_cast<size_t>(s)];
      const ParamTable table(c, TensorSplit{}, PipelineSplit{3, s, b.first, b.count});
      const std::vector<ModuleEvent> real = GPT::training_events(table, r);
      auto ops = make_cpu_ops();
      FlatHooks hooks(table, *ops);
      EmulatedGPT emulated(table, r, nanoseconds(0), 1.0 / 3.0);
      emulated.forward(hooks);
      const size_t forward_events = hooks.events.size();
      emulated.backward(hooks);
      INFO("stage " << s << ", recompute " << recompute_name(r));
      REQUIRE(hooks.events.size() == real.size());
      for (size_t i = 0; i < real.size(); i++) {
        INFO("event " << i);
        CHECK(same(hooks.events[i], real[i]));
      }
      // The forward ends where the backward's root fetch begins.
      REQUIRE(forward_events < real.size());
      CHECK(real[forward_events].kind == ModuleEvent::Fetch);
      CHECK(real[forward_events].backward);
      CHECK(table.modules()[static_cast<size_t>(real[forward_events].index)].is_root());
      for (size_t i = 0; i < forward_events; i++) CHECK_FALSE(real[i].backward);
    }
}

TEST_CASE("emulation splits a micro-step as the step-time model does", "[emulation]") {
  const ParamTable table(gpt_shape(2, 2, 16, 29, 6));
  const nanoseconds micro(90'000'000);
  const double forward = 0.25;
  EmulatedGPT emulated(table, Recompute::None, micro, forward);
  const std::vector<ModuleEvent>& events = emulated.events();
  const std::vector<nanoseconds>& waits = emulated.waits();
  // Without recompute each pass runs every module once; the LM head's own
  // parameter is the tied wte, so wte counts twice (embedding and head).
  double modules_elements = 0;
  for (const ModuleInfo& m : table.modules())
    for (int p : m.params) modules_elements += table.params()[p].numel;
  CHECK(modules_elements > table.total());
  double pass_ns[2] = {0, 0};
  int pass = 0;
  for (size_t i = 0; i < events.size(); i++) {
    const ModuleEvent& e = events[i];
    if (e.kind == ModuleEvent::Fetch && table.modules()[e.index].is_root())
      pass = e.backward ? 1 : 0;
    if (e.kind != ModuleEvent::Fetch) {
      CHECK(waits[i].count() == 0);
      continue;
    }
    pass_ns[pass] += static_cast<double>(waits[i].count());
    // A module's wait is its own parameter elements' share of its pass.
    size_t own = 0;
    for (int p : table.modules()[e.index].params) own += table.params()[p].numel;
    const double pass_total = micro.count() * (pass == 0 ? forward : 1 - forward);
    CHECK(static_cast<double>(waits[i].count()) ==
          Approx(pass_total * own / modules_elements).margin(1.0));
  }
  // Truncation to whole nanoseconds loses less than one per module.
  CHECK(pass_ns[0] == Approx(micro.count() * forward).margin(events.size()));
  CHECK(pass_ns[1] == Approx(micro.count() * (1 - forward)).margin(events.size()));
}

TEST_CASE("an emulated micro-step takes at least the stated time", "[emulation]") {
  const ParamTable table(gpt_shape(2, 2, 16, 29, 6));
  auto ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  std::vector<float> w(table.total(), 0.0f);
  hooks.set_params(w);
  const nanoseconds micro(40'000'000);
  EmulatedGPT emulated(table, Recompute::None, micro, 1.0 / 3.0);
  const auto t0 = std::chrono::steady_clock::now();
  emulated.forward_backward(hooks);
  const auto took = std::chrono::steady_clock::now() - t0;
  // Sleeping never returns early, so the lower bound is exact (less the
  // nanoseconds truncated per module); the upper bound only catches a wait
  // that is far too long, with room for a loaded machine.
  CHECK(took >= micro - nanoseconds(emulated.events().size()));
  CHECK(took < micro + std::chrono::seconds(2));
}

TEST_CASE("an emulated rank waits its share of the optimizer step", "[emulation]") {
  EmulatedDurations d;
  d.optimizer_ms = 12;
  CHECK(optimizer_wait_ms(d, 1000, 1000) == Approx(12));
  CHECK(optimizer_wait_ms(d, 250, 1000) == Approx(3));
  CHECK(optimizer_wait_ms(d, 0, 1000) == 0);
}

TEST_CASE("emulation durations: given, scaled, and refused for another shape", "[emulation]") {
  Config c;
  c.model = gpt_shape(2, 2, 16, 29, 6);
  c.system.compute = "emulate";
  c.system.emulate_micro_step_ms = 10;
  c.system.emulate_optimizer_ms = 4;
  c.system.emulate_time_scale = 2.5;
  const EmulatedDurations d = emulated_durations(c);
  CHECK(d.micro_step_ms == Approx(25));
  CHECK(d.optimizer_ms == Approx(10));
  CHECK(d.source == "stated in the config");
}

}  // namespace zt
