// Where a micro-step's compute lies among its events (model/compute_places.h):
// the rule compute emulation sleeps by, and the one the plan places its calls
// by, so the step-time model times a call where an emulated rank issues it.
#include <chrono>
#include <map>
#include <vector>

#include "model/compute_places.h"
#include "model/emulated_gpt.h"
#include "model/gpt.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/plan.h"

namespace zt {
namespace {

double elements_of(const ParamTable& table, int module) {
  double n = 0;
  for (int p : table.modules()[module].params) n += static_cast<double>(table.params()[p].numel);
  return n;
}

}  // namespace

TEST_CASE("compute places: the tied head's share comes first, wte's gradient last", "[model]") {
  const ParamTable table(gpt_shape(2, 2, 16, 29, 6));
  const std::vector<ModuleEvent> events = GPT::training_events(table, Recompute::None);
  const ComputePlaces places = compute_places(table, events);
  const int head = table.module_index("lm_head");
  const int wte = table.module_index("wte");
  // Without recompute a pass runs every module once: wte's elements count twice.
  const double pass = static_cast<double>(table.total()) + elements_of(table, wte);
  double sums[2] = {0, 0};
  int first_backward_fetch = -1, wte_grad = -1;
  for (size_t i = 0; i < events.size(); i++) {
    const ModuleEvent& e = events[i];
    sums[places.backward[i]] += places.share[i];
    const bool owns = e.kind == ModuleEvent::Fetch && !table.modules()[e.index].params.empty();
    if (owns && places.backward[i] && first_backward_fetch < 0)
      first_backward_fetch = static_cast<int>(i);
    if (e.kind == ModuleEvent::GradReady && table.params()[e.index].name == "wte.weight")
      wte_grad = static_cast<int>(i);
    if (e.kind != ModuleEvent::Fetch) CHECK(places.share[i] == 0);
    if (owns) CHECK(places.share[i] == Approx(elements_of(table, e.index) / pass));
  }
  CHECK(sums[0] == Approx(1.0));
  CHECK(sums[1] == Approx(1.0));
  REQUIRE(first_backward_fetch >= 0);
  REQUIRE(wte_grad >= 0);
  // The backward opens with the head's product against the tied wte...
  CHECK(events[first_backward_fetch].index == head);
  CHECK(places.done_before[first_backward_fetch] == 0);
  // ...and wte's gradient is ready once the whole backward is done.
  CHECK(places.done_before[wte_grad] == Approx(1.0));
}

// For every stage that reduces during the backward: each gradient call's
// place is the share of the backward an emulated rank has slept through when
// the gradient that makes it reduce arrives.
TEST_CASE("plan places each gradient call where the emulated rank issues it", "[model][plan]") {
  const ParamTable table(tiny_model());
  const std::chrono::nanoseconds micro(90'000'000);
  const double forward = 1.0 / 3;
  const EmulatedGPT emulated(table, Recompute::None, micro, forward);
  // The backward slept through before each GradReady, in arrival order.
  std::vector<double> slept;
  double backward_ns = 0;
  bool in_backward = false;
  for (size_t i = 0; i < emulated.events().size(); i++) {
    const ModuleEvent& e = emulated.events()[i];
    if (e.kind == ModuleEvent::Fetch && e.backward && table.modules()[e.index].is_root())
      in_backward = true;
    if (e.kind == ModuleEvent::GradReady) slept.push_back(backward_ns);
    if (in_backward) backward_ns += static_cast<double>(emulated.waits()[i].count());
  }
  const double backward_total = micro.count() * (1 - forward);
  for (int stage : {2, 3}) {
    ZeroConfig z;
    z.stage = stage;
    z.overlap_comm = true;
    z.overlap_comm_set = true;
    z.reduce_bucket_size = 2000;  // several buckets on tiny_model
    const StepPlan plan =
        plan_step(setup_for(z, table), table, 2, 1, DType::F32, NodeMap::uniform(2, 2));
    INFO("stage " << stage);
    REQUIRE(plan.grads.reduce_at.size() == slept.size() + 1);
    std::map<std::string, double> expected;  // "gradients, bucket b" -> its place
    for (size_t i = 0; i < plan.grads.reduce_at.size(); i++)
      for (int b : plan.grads.reduce_at[i])
        expected["gradients, bucket " + std::to_string(b)] =
            i < slept.size() ? slept[i] / backward_total : 1.0;
    REQUIRE(expected.size() > 2);
    int checked = 0;
    for (const PlannedCall& c : plan.steady_step) {
      if (c.purpose != Purpose::Gradients) continue;
      INFO(c.what);
      REQUIRE(expected.count(c.what) == 1);
      // Waits are whole nanoseconds: within one per module of the exact share.
      CHECK(c.at == Approx(expected[c.what]).margin(1e-6));
      checked++;
    }
    CHECK(checked >= static_cast<int>(expected.size()));
    // The head's product against the tied wte opens the backward before any
    // gradient is ready, so no bucket is reduced before its share.
    const double head_share =
        elements_of(table, table.module_index("lm_head")) /
        (static_cast<double>(table.total()) + elements_of(table, table.module_index("wte")));
    for (const PlannedCall& c : plan.steady_step)
      if (c.purpose == Purpose::Gradients) CHECK(c.at >= head_share - 1e-9);
  }
}

}  // namespace zt
