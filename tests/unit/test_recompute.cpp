// Activation recompute (train.recompute) on the CPU: at every level the loss
// and every gradient byte equal recompute none's after a forward/backward on
// fresh random weights and tokens; the model emits its declared events; the
// activation ledger equals activation_bytes() and shrinks with each level; a
// few ZeRO training steps (stage 3 among them) give identical losses and weights.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/activation_memory.h"
#include "model/gpt.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "train/loop/init_weights.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

const Recompute kLevels[] = {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block};

GPTConfig recompute_shape() { return gpt_shape(3, 2, 24, 53, 12); }

struct Pass {
  double loss;
  std::vector<float> grads, token_losses;
  std::vector<ModuleEvent> events;
};

Pass forward_backward(const ParamTable& table, Recompute r, const std::vector<float>& w,
                      const std::vector<int>& in, const std::vector<int>& tgt, int B, int T) {
  auto ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  hooks.set_params(w);
  GPT model(table, *ops, B, T, r);
  Pass p;
  p.loss = model.forward_backward(in.data(), tgt.data(), 1.0f / (B * T), hooks);
  p.token_losses = model.token_losses();
  p.grads = hooks.grads_f32();
  p.events = hooks.events;
  return p;
}

bool same_event(const ModuleEvent& a, const ModuleEvent& b) {
  return a.kind == b.kind && a.backward == b.backward && a.index == b.index;
}

}  // namespace

TEST_CASE("every recompute level gives recompute none's gradients, byte for byte", "[recompute]") {
  const GPTConfig c = recompute_shape();
  const ParamTable table(c);
  std::mt19937_64 rng(test_seed());
  const int B = 2, T = c.seq_len;
  std::vector<float> w(table.total());
  init_gpt2_weights(table, rng(), w.data());
  std::vector<int> in(B * T), tgt(B * T);
  for (int i = 0; i < B * T; i++) {
    in[i] = static_cast<int>(rng() % c.vocab_size);
    tgt[i] = static_cast<int>(rng() % c.vocab_size);
  }
  const Pass ref = forward_backward(table, Recompute::None, w, in, tgt, B, T);
  // Gradients that are all zero would make the comparison prove nothing.
  size_t nonzero = 0;
  for (float g : ref.grads) nonzero += g != 0.0f;
  CHECK(nonzero > ref.grads.size() / 2);
  for (Recompute r : kLevels) {
    INFO("recompute " << recompute_name(r));
    const Pass got = forward_backward(table, r, w, in, tgt, B, T);
    CHECK(got.loss == ref.loss);
    CHECK(std::memcmp(got.token_losses.data(), ref.token_losses.data(),
                      ref.token_losses.size() * sizeof(float)) == 0);
    for (const ParamInfo& p : table.params()) {
      INFO(p.name);
      CHECK(std::memcmp(got.grads.data() + p.offset, ref.grads.data() + p.offset,
                        p.numel * sizeof(float)) == 0);
    }
    const std::vector<ModuleEvent> declared = GPT::training_events(table, r);
    REQUIRE(got.events.size() == declared.size());
    size_t differ = 0;
    for (size_t i = 0; i < declared.size(); i++) differ += !same_event(got.events[i], declared[i]);
    CHECK(differ == 0);
  }
}

TEST_CASE("recompute events: each level's forward uses inside the backward", "[recompute]") {
  GPTConfig c = recompute_shape();
  c.n_layer = 2;
  const ParamTable table(c);
  const std::vector<ModuleEvent> none = GPT::training_events(table, Recompute::None);
  auto forward_fetches_in_backward = [&](Recompute r) {
    std::vector<std::string> out;
    bool in_backward = false;
    for (const ModuleEvent& e : GPT::training_events(table, r)) {
      in_backward = in_backward || (e.kind == ModuleEvent::Fetch && e.backward);
      if (in_backward && e.kind == ModuleEvent::Fetch && !e.backward)
        out.push_back(table.modules()[e.index].name);
    }
    return out;
  };
  CHECK(forward_fetches_in_backward(Recompute::None).empty());
  using V = std::vector<std::string>;
  CHECK(forward_fetches_in_backward(Recompute::Mlp) ==
        V{"h.1.mlp", "h.1.mlp.c_fc", "h.0.mlp", "h.0.mlp.c_fc"});
  CHECK(forward_fetches_in_backward(Recompute::Attn) ==
        V{"h.1.ln_1", "h.1.attn", "h.1.attn.c_attn", "h.0.ln_1", "h.0.attn", "h.0.attn.c_attn"});
  const V block = forward_fetches_in_backward(Recompute::Block);
  CHECK(block == V{"h.1", "h.1.ln_1", "h.1.attn", "h.1.attn.c_attn", "h.1.attn.c_proj", "h.1.ln_2",
                   "h.1.mlp", "h.1.mlp.c_fc", "h.0", "h.0.ln_1", "h.0.attn", "h.0.attn.c_attn",
                   "h.0.attn.c_proj", "h.0.ln_2", "h.0.mlp", "h.0.mlp.c_fc"});
  // The gradients still arrive in the same order: the buckets do not change.
  CHECK(grad_ready_order(GPT::training_events(table, Recompute::Block)) == grad_ready_order(none));
}

TEST_CASE("the activation ledger equals activation_bytes() at every level, and shrinks",
          "[recompute]") {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 3; trial++) {
    const int n_layer = 2 + static_cast<int>(rng() % 4);
    const int n_head = 1 + static_cast<int>(rng() % 3);
    const int n_embd = n_head * (4 + static_cast<int>(rng() % 5));
    const int vocab_size = 20 + static_cast<int>(rng() % 60);
    const GPTConfig c =
        gpt_shape(n_layer, n_head, n_embd, vocab_size, 4 + static_cast<int>(rng() % 12));
    const int B = 1 + static_cast<int>(rng() % 3), T = c.seq_len;
    const ParamTable table(c);
    std::vector<int> in(B * T), tgt(B * T);
    for (int i = 0; i < B * T; i++) {
      in[i] = static_cast<int>(rng() % c.vocab_size);
      tgt[i] = static_cast<int>(rng() % c.vocab_size);
    }
    uint64_t previous = 0;
    for (Recompute r : kLevels) {
      INFO("L " << c.n_layer << " H " << c.n_head << " C " << c.n_embd << " V " << c.vocab_size
                << " B " << B << " T " << T << ", recompute " << recompute_name(r));
      auto ops = make_cpu_ops();
      // Parameters left zero: what is allocated does not depend on the values,
      // and set_params' staging would count as an activation.
      FlatHooks hooks(table, *ops);
      {
        GPT model(table, *ops, B, T, r);
        model.forward_backward(in.data(), tgt.data(), 1.0f / (B * T), hooks);
        const uint64_t want = activation_bytes(c, B, T, r, DType::F32);
        CHECK(ops->ledger().peak(MemCategory::Activations) == want);
        CHECK(ops->ledger().current(MemCategory::Activations) == want);
        if (r != Recompute::None) CHECK(want < previous);
        previous = want;
      }
      CHECK(ops->ledger().current(MemCategory::Activations) == 0);
    }
  }
}

TEST_CASE("training steps with recompute give recompute none's losses and weights exactly",
          "[recompute]") {
  // Stage 0 and stage 3 (whose gatherer sees the recomputed forward's fetches
  // inside the backward), prefetching or not.
  for (int stage : {0, 3}) {
    for (int64_t prefetch : {int64_t(0), int64_t(50000000)}) {
      if (stage == 0 && prefetch > 0) continue;
      ZeroConfig z;
      z.stage = stage;
      z.stage3_prefetch_bucket_size = prefetch;
      z.stage3_param_persistence_threshold = 0;
      auto run = [&](Recompute r) {
        auto ops = make_cpu_ops();
        std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
        return train(z, *comm, *ops, tiny_model(), "two", r);
      };
      const RunResult ref = run(Recompute::None);
      for (Recompute r : {Recompute::Attn, Recompute::Mlp, Recompute::Block}) {
        INFO("stage " << stage << " prefetch " << prefetch << " recompute " << recompute_name(r));
        const RunResult got = run(r);
        CHECK(got.losses == ref.losses);
        CHECK(got.master == ref.master);
      }
    }
  }
}

}  // namespace zt
