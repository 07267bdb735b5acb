// The model's hook events: forward_backward emits exactly GPT::training_events
// (the list ZeRO's schedules are built from, recorded from a narrow run of the
// same model), in the order the same PyTorch GPT-2 runs its modules and
// gradient hooks under DeepSpeed (recorded from DeepSpeed 0.14.4's coordinator
// and AccumulateGrad hooks); a model that runs in another order changes
// training_events with it.
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/loop/init_weights.h"

namespace zt {
namespace {

std::string text(const ParamTable& t, const ModuleEvent& e) {
  if (e.kind == ModuleEvent::GradReady) return "grad " + t.params()[e.index].name;
  const std::string name = t.modules()[e.index].name.empty() ? "<root>" : t.modules()[e.index].name;
  return std::string(e.kind == ModuleEvent::Fetch ? "fetch " : "release ") +
         (e.backward ? "B " : "F ") + name;
}

std::vector<std::string> texts(const ParamTable& t, const std::vector<ModuleEvent>& events) {
  std::vector<std::string> out;
  for (const ModuleEvent& e : events) out.push_back(text(t, e));
  return out;
}

GPTConfig small_model(int n_layer) { return gpt_shape(n_layer, 2, 16, 32, 8); }

}  // namespace

TEST_CASE("the model emits its declared events, in PyTorch's order", "[cpu_ops]") {
  const ParamTable table(small_model(2));
  const std::vector<ModuleEvent> emitted = forward_backward_events(table, Recompute::None);
  const std::vector<ModuleEvent> declared = GPT::training_events(table);
  REQUIRE(emitted.size() == declared.size());
  for (size_t i = 0; i < declared.size(); i++) {
    INFO("event " << i);
    CHECK(text(table, emitted[i]) == text(table, declared[i]));
  }
  // Spot checks against DeepSpeed's recorded order (2 layers).
  std::vector<std::string> all;
  for (const ModuleEvent& e : declared) all.push_back(text(table, e));
  auto at = [&](const std::string& s) {
    for (size_t i = 0; i < all.size(); i++)
      if (all[i] == s) return static_cast<int>(i);
    return -1;
  };
  CHECK(all.front() == "fetch F <root>");
  CHECK(at("release F wte") < at("fetch F wpe"));
  CHECK(at("fetch B lm_head") < at("fetch B ln_f"));
  CHECK(at("grad ln_f.weight") + 1 == at("grad ln_f.bias"));
  CHECK(at("grad h.1.mlp.c_proj.bias") + 1 == at("grad h.1.mlp.c_proj.weight"));
  CHECK(at("grad h.1.ln_2.weight") + 1 == at("grad h.1.ln_2.bias"));
  CHECK(at("grad wpe.weight") < at("grad wte.weight"));
  CHECK(all.back() == "release B <root>");
  // wte completes once, at the embedding, though the LM head adds into it first.
  int wte_ready = 0;
  for (const std::string& s : all) wte_ready += s == "grad wte.weight";
  CHECK(wte_ready == 1);
  CHECK(at("grad wte.weight") > at("fetch B wte"));
}

TEST_CASE("one layer's events, in full", "[cpu_ops]") {
  // F/B: forward or backward; + fetch, - release; grad: the gradient is ready.
  const std::string want =
      "+F <root> +F wte -F wte +F wpe -F wpe +F h.0 +F h.0.ln_1 -F h.0.ln_1 +F h.0.attn "
      "+F h.0.attn.c_attn -F h.0.attn.c_attn +F h.0.attn.c_proj -F h.0.attn.c_proj -F h.0.attn "
      "+F h.0.ln_2 -F h.0.ln_2 +F h.0.mlp +F h.0.mlp.c_fc -F h.0.mlp.c_fc +F h.0.mlp.c_proj "
      "-F h.0.mlp.c_proj -F h.0.mlp -F h.0 +F ln_f -F ln_f +F lm_head -F lm_head -F <root> "
      "+B <root> +B lm_head -B lm_head +B ln_f grad ln_f.weight grad ln_f.bias -B ln_f +B h.0 "
      "+B h.0.mlp +B h.0.mlp.c_proj grad h.0.mlp.c_proj.bias grad h.0.mlp.c_proj.weight "
      "-B h.0.mlp.c_proj +B h.0.mlp.c_fc grad h.0.mlp.c_fc.bias grad h.0.mlp.c_fc.weight "
      "-B h.0.mlp.c_fc -B h.0.mlp +B h.0.ln_2 grad h.0.ln_2.weight grad h.0.ln_2.bias "
      "-B h.0.ln_2 +B h.0.attn +B h.0.attn.c_proj grad h.0.attn.c_proj.bias "
      "grad h.0.attn.c_proj.weight -B h.0.attn.c_proj +B h.0.attn.c_attn "
      "grad h.0.attn.c_attn.bias grad h.0.attn.c_attn.weight -B h.0.attn.c_attn -B h.0.attn "
      "+B h.0.ln_1 grad h.0.ln_1.weight grad h.0.ln_1.bias -B h.0.ln_1 -B h.0 +B wpe "
      "grad wpe.weight -B wpe +B wte grad wte.weight -B wte -B <root>";
  const ParamTable table(small_model(1));
  std::string got;
  for (const ModuleEvent& e : GPT::training_events(table)) {
    const std::string t = text(table, e);  // "fetch F name", "release B name", "grad name"
    if (!got.empty()) got += " ";
    if (e.kind == ModuleEvent::GradReady) got += t;
    else got += (e.kind == ModuleEvent::Fetch ? "+" : "-") + t.substr(t.find(' ') + 1);
  }
  CHECK(got == want);
}

TEST_CASE("training_events changes with the order the model runs in", "[cpu_ops]") {
  // The recompute levels and the layer count are what changes the model's
  // order at run time: each gives the events that model emits, and no two agree.
  std::vector<std::vector<std::string>> seen;
  for (int n_layer : {1, 3}) {
    const ParamTable table(small_model(n_layer));
    for (Recompute r : {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block}) {
      INFO(n_layer << " layers, recompute " << recompute_name(r));
      const std::vector<std::string> declared = texts(table, GPT::training_events(table, r));
      CHECK(declared == texts(table, forward_backward_events(table, r)));
      for (const std::vector<std::string>& other : seen) CHECK(declared != other);
      seen.push_back(declared);
    }
  }
}

}  // namespace zt
