// The model's hook events: forward_backward emits exactly GPT::training_events
// (the list ZeRO's schedules are built from), in the order the same PyTorch
// GPT-2 runs its modules and gradient hooks under DeepSpeed (recorded from
// DeepSpeed 0.14.4's coordinator and AccumulateGrad hooks).
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tests/catch.h"
#include "tests/flat_hooks.h"
#include "train/init_weights.h"

namespace zt {
namespace {

std::string text(const ParamTable& t, const ModuleEvent& e) {
  if (e.kind == ModuleEvent::GradReady) return "grad " + t.params()[e.index].name;
  const std::string name = t.modules()[e.index].name.empty() ? "<root>" : t.modules()[e.index].name;
  return std::string(e.kind == ModuleEvent::Fetch ? "fetch " : "release ") +
         (e.backward ? "B " : "F ") + name;
}

}  // namespace

TEST_CASE("the model emits its declared events, in PyTorch's order", "[cpu_ops]") {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.vocab_size = 32;
  c.seq_len = 8;
  const ParamTable table(c);
  auto ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  std::vector<float> w(table.total());
  init_gpt2_weights(table, 3, w.data());
  hooks.set_params(w);
  GPT model(table, *ops, 2, 8);
  std::vector<int> in(16), tgt(16);
  for (int i = 0; i < 16; i++) in[i] = tgt[(i + 1) % 16] = i % c.vocab_size;
  model.forward_backward(in.data(), tgt.data(), 1.0f / 16, hooks);
  const std::vector<ModuleEvent> declared = GPT::training_events(table);
  REQUIRE(hooks.events.size() == declared.size());
  for (size_t i = 0; i < declared.size(); i++) {
    INFO("event " << i);
    CHECK(text(table, hooks.events[i]) == text(table, declared[i]));
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

}  // namespace zt
