// What the optimizer does to which tensor, checked through the real engines and
// the real trainer rather than the AdamW kernel alone:
//  - weight decay applies to the embeddings and the 2-D matmul weights, never
//    to a bias or a layernorm gain or bias, in every stage's optimizer pieces;
//  - a step with zero gradients leaves every non-decayed tensor bit for bit and
//    scales every decayed one by (1 - lr*wd), to fp32 rounding;
//  - the trainer's first step hands AdamW t = 1: with weight decay 0 and no
//    clipping, every parameter moves by lr * g/(|g| + eps), i.e. by lr to
//    within eps/|g|, whatever the gradient's size (t = 2 would give 0.74 lr).
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/shard.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/support_zero.h"
#include "tests/support/test_support.h"
#include "train/io/checkpoint.h"
#include "train/loop/init_weights.h"
#include "train/loop/trainer.h"
#include "zero/comm/communicators.h"
#include "zero/stages/engine.h"

namespace zt {
namespace {

GPTConfig small_model() { return gpt_shape(2, 2, 16, 53, 8); }

std::vector<float> random_weights(const ParamTable& table, uint64_t salt) {
  std::mt19937_64 rng(test_seed() + salt);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> w(table.total());
  for (float& x : w) x = normal(rng);
  return w;
}

bool is_bias_or_norm(const std::string& name) {
  return name.find("bias") != std::string::npos || name.find("ln_") != std::string::npos;
}

}  // namespace

TEST_CASE("weight decay applies to the embeddings and the matmul weights only", "[optimizer]") {
  const ParamTable table(small_model());
  int decayed = 0;
  for (const ParamInfo& p : table.params()) {
    INFO(p.name);
    const bool embedding = p.name == "wte.weight" || p.name == "wpe.weight";
    CHECK(p.decay == (p.shape.size() == 2));
    if (embedding) CHECK(p.decay);
    if (is_bias_or_norm(p.name)) CHECK_FALSE(p.decay);
    decayed += p.decay;
  }
  CHECK(decayed == 2 + 4 * small_model().n_layer);  // wte, wpe; qkv, proj, fc, fc_proj per block

  for (int stage = 0; stage <= 3; stage++) {
    INFO("stage " << stage);
    std::unique_ptr<Ops> ops = make_cpu_ops();
    std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
    ZeroConfig z;
    z.stage = stage;
    std::unique_ptr<ZeroEngine> engine =
        make_zero_engine(engine_setup(z, table, 0), table, *ops, *comm);
    for (const OptimPiece& piece : engine->optimizer().pieces())
      for (const ParamInfo& p : table.params())
        if (piece.flat_begin < p.offset + p.numel && p.offset < piece.flat_begin + piece.n) {
          INFO(p.name);
          CHECK(piece.decay == p.decay);
        }
  }
}

TEST_CASE("a zero-gradient step leaves undecayed tensors and scales decayed ones by 1 - lr*wd",
          "[optimizer]") {
  const ParamTable table(small_model());
  const std::vector<float> w = random_weights(table, 11);
  const float lr = 0.1f, wd = 0.5f;
  const int B = 2, T = small_model().seq_len;
  std::vector<int> in(B * T), tgt(B * T);
  for (int i = 0; i < B * T; i++) in[i] = tgt[(i + 1) % (B * T)] = i % small_model().vocab_size;
  for (int stage = 0; stage <= 3; stage++) {
    INFO("stage " << stage);
    std::unique_ptr<Ops> ops = make_cpu_ops();
    std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
    ZeroConfig z;
    z.stage = stage;
    std::unique_ptr<ZeroEngine> engine =
        make_zero_engine(engine_setup(z, table, 0), table, *ops, *comm);
    engine->init_weights(w.data());
    GPT model(table, *ops, B, T);
    engine->begin_micro_step(0, 1);
    model.forward_backward(in.data(), tgt.data(), 0.0f, *engine);  // every gradient exactly 0
    engine->end_micro_step();
    engine->step(OptimSettings{lr, 0.9f, 0.95f, 1e-8f, wd}, 1);
    const std::vector<float> after = engine->gather_master(*ops, *comm, table.total());
    for (const ParamInfo& p : table.params()) {
      INFO(p.name);
      size_t wrong = 0;
      for (size_t j = p.offset; j < p.offset + p.numel; j++) {
        if (!p.decay) {
          wrong += after[j] != w[j];
          continue;
        }
        const double want = static_cast<double>(w[j]) * (1.0 - static_cast<double>(lr) * wd);
        const double ulp = std::nextafter(std::fabs(w[j]), INFINITY) - std::fabs(w[j]);
        wrong += std::fabs(after[j] - want) > 2 * ulp;
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("the trainer's first AdamW step moves every parameter by lr, within eps/|g|",
          "[optimizer]") {
  const GPTConfig shape = small_model();
  const ParamTable table(shape);
  const int B = 2, T = shape.seq_len, accum = 2;
  const double lr = 1e-2, eps = 1e-8;
  const uint64_t seed = test_seed() % 100000;
  TestDir dir("zt_test_trainer");
  std::mt19937_64 rng(test_seed() + 21);
  std::vector<uint32_t> tokens(4000);
  for (uint32_t& t : tokens) t = static_cast<uint32_t>(rng() % shape.vocab_size);
  write_shard(dir.file("train_000.bin"), tokens, false);

  for (int stage = 0; stage <= 3; stage++) {
    INFO("stage " << stage);
    const std::string run = dir.file("run" + std::to_string(stage));
    std::ofstream(dir.file("c.yaml"))
        << "model: {n_layer: " << shape.n_layer << ", n_head: " << shape.n_head
        << ", n_embd: " << shape.n_embd << ", vocab_size: " << shape.vocab_size
        << ", seq_len: " << T << "}\n"
        << "data: {train: '" << dir.file("train_*.bin") << "', tokenizer: byte}\n"
        << "train: {steps: 1, micro_batch: " << B << ", global_batch_tokens: " << B * T * accum
        << ", lr: " << lr << ", min_lr: 0, warmup_steps: 0, weight_decay: 0, grad_clip: 0"
        << ", eps: " << eps << ", eval_every: 0, sample_every: 0, checkpoint_every: 1"
        << ", seed: " << seed << "}\n"
        << "zero: {stage: " << stage << "}\n";
    TrainArgs args;
    args.config_path = dir.file("c.yaml");
    args.run_dir = run;
    {
      StdoutTo quiet(dir.file("train.log"));
      REQUIRE(run_train(args) == 0);
    }
    const std::string ckpt = run + "/checkpoints/step_00000001";
    const std::vector<float> after = read_checkpoint_weights(ckpt, read_checkpoint_meta(ckpt));

    // The same gradient, summed over the step's micro-batches, without ZeRO.
    std::vector<float> before(table.total());
    init_gpt2_weights(table, seed, before.data());
    std::unique_ptr<Ops> ops = make_cpu_ops();
    FlatHooks hooks(table, *ops);
    hooks.set_params(before);
    GPT model(table, *ops, B, T);
    DataLoader data(dir.file("train_*.bin"), shape.vocab_size, B, T, 0, 1, accum, seed, true);
    std::vector<int> in(B * T), tgt(B * T);
    for (int micro = 0; micro < accum; micro++) {
      data.micro_batch(0, micro, in.data(), tgt.data());
      model.forward_backward(in.data(), tgt.data(), 1.0f / (B * T * accum), hooks);
    }
    const std::vector<float> g = hooks.grads_f32();

    size_t strong = 0, wrong = 0;
    double worst = 0;
    for (size_t i = 0; i < g.size(); i++) {
      if (g[i] == 0) continue;
      const double moved = (static_cast<double>(before[i]) - after[i]) / (lr * (g[i] > 0 ? 1 : -1));
      const double allowed = eps / std::fabs(g[i]) + 1e-3;  // + fp32 rounding of the weight
      worst = std::max(worst, std::fabs(moved - 1) - eps / std::fabs(g[i]));
      wrong += std::fabs(moved - 1) > allowed;
      strong += std::fabs(g[i]) > 1e3 * eps;
    }
    INFO("worst |moved/lr - 1| - eps/|g| = " << worst);
    CHECK(wrong == 0);
    CHECK(strong > g.size() / 2);  // the check is about most parameters, not a few
  }
}

}  // namespace zt
