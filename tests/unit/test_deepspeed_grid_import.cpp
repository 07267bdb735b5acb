// The ds_config's "tensor_parallel" and "pipeline" blocks
// (train/deepspeed/deepspeed_grid_import.cpp): each mapping, warning and refusal, with the numbers
// worked by hand from DeepSpeed's rules (docs/configuration.md, "Tensor and pipeline
// parallelism").
#include <algorithm>

#include "tests/support/catch.h"
#include "tests/support/deepspeed_import_support.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"
#include "train/deepspeed/deepspeed_release_keys.h"

namespace zt {
namespace {

// The default model (4 layers, 4 heads, vocabulary 256, 128 tokens), with what a tensor-parallel
// or pipelined run requires switched off.
Config grid_config() {
  Config c;
  c.train.grad_clip = 0;
  c.train.sample_every = 0;
  c.train.checkpoint_every = 0;
  return c;
}

}  // namespace

TEST_CASE("tensor_parallel.autotp_size is parallel.tensor", "[deepspeed][grid]") {
  Config c = grid_config();
  const int64_t tokens = c.train.global_batch_tokens;
  auto w = import(R"({"bf16": {"enabled": true}, "tensor_parallel": {"autotp_size": 2}})", 4, c);
  REQUIRE(c.parallel.tensor == 2);
  REQUIRE(c.train.global_batch_tokens == tokens);  // no batch keys: zerotrain's batch
  REQUIRE(count_mentions(w, "key 'tensor_parallel.autotp_size': parallel.tensor 2 (") == 1);
  // DeepSpeed 0.14.4, the import's default release, predates the block and ignores it.
  REQUIRE(count_mentions(w,
                         "key 'tensor_parallel': not a key of DeepSpeed 0.14.4 (added in "
                         "0.16.4); DeepSpeed 0.14.4 ignores it") == 1);
  REQUIRE(w.size() == 2);

  Config d = grid_config();
  REQUIRE(import(R"({"bf16": {"enabled": true}, "tensor_parallel": {"autotp_size": 2}})", 4, d,
                 {0, 16, 4})
              .size() == 1);

  // 0, DeepSpeed's default, is AutoTP off: parallel.tensor as the YAML has it. 1 is one rank.
  Config e = grid_config();
  e.parallel.tensor = 2;
  auto off = import(R"({"tensor_parallel": {"autotp_size": 0}})", 2, e);
  REQUIRE(e.parallel.tensor == 2);
  REQUIRE(count_mentions(off, "parallel.tensor") == 0);
  import(R"({"tensor_parallel": {"autotp_size": 1}})", 2, e);
  REQUIRE(e.parallel.tensor == 1);
}

TEST_CASE("AutoTP's batch: DeepSpeed counts every rank, zerotrain the distinct sequences",
          "[deepspeed][grid]") {
  // DeepSpeed without an mpu: train_batch_size = 2 * 1 * 4 ranks = 8; the two tensor groups
  // read 2 * 1 sequences each, 4 in all: 4 * 128 tokens, one micro-step (2 * 128 * 2 per round).
  Config c = grid_config();
  auto w = import(R"({"tensor_parallel": {"autotp_size": 2}, "train_micro_batch_size_per_gpu": 2,
                      "gradient_accumulation_steps": 1})",
                  4, c);
  REQUIRE(c.train.micro_batch == 2);
  REQUIRE(c.train.global_batch_tokens == 4 * 128);
  REQUIRE(grad_accum_steps(c, 4) == 1);
  REQUIRE(count_mentions(w,
                         "DeepSpeed's train_batch_size 8 counts all 4 ranks, but each group "
                         "of 2 tensor ranks reads one micro-batch: zerotrain's global batch "
                         "is the 4 distinct sequences (2*1*2)") == 1);

  // train_batch_size 24 over 4 ranks at micro 3: DeepSpeed's accumulation 2; 3 * 2 * 2 = 12.
  Config d = grid_config();
  import(R"({"tensor_parallel": {"autotp_size": 2}, "train_batch_size": 24,
             "train_micro_batch_size_per_gpu": 3})",
         4, d);
  REQUIRE(d.train.global_batch_tokens == 12 * 128);
  REQUIRE(grad_accum_steps(d, 4) == 2);

  // A YAML parallel.tensor (Megatron's mpu) counts the data-parallel ranks, as DeepSpeed does:
  // 2 * 1 * (4 / 2) = 4, no line.
  Config e = grid_config();
  e.parallel.tensor = 2;
  auto m =
      import(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1})", 4, e);
  REQUIRE(e.train.global_batch_tokens == 4 * 128);
  REQUIRE(count_mentions(m, "counts all") == 0);
  require_parts(import_error(R"({"train_batch_size": 6, "train_micro_batch_size_per_gpu": 2,
                                 "gradient_accumulation_steps": 1})",
                             4, e),
                {"key 'train_batch_size'", "= 2*1*2 = 4",
                 "world size 2: the data-parallel ranks, 4 started over parallel.tensor 2 x "
                 "parallel.pipeline 1"});
}

TEST_CASE("tensor_parallel: refusals and ignored keys", "[deepspeed][grid]") {
  const Config c = grid_config();
  require_parts(import_error(R"({"tensor_parallel": {"autotp_size": "2"}})", 2, c),
                {"key 'tensor_parallel.autotp_size'",
                 "expected an integer >= 0 (0: AutoTP off), "
                 "got '2'"});
  require_parts(import_error(R"({"tensor_parallel": {"autotp_size": -1}})", 2, c),
                {"key 'tensor_parallel.autotp_size'", "expected an integer >= 0, got -1"});
  require_parts(import_error(R"({"tensor_parallel": {"autotp_size": 1.5}})", 2, c),
                {"key 'tensor_parallel.autotp_size'", "expected an integer, got 1.5"});
  require_parts(import_error(R"({"tensor_parallel": {"autotp_size": null}})", 2, c),
                {"key 'tensor_parallel.autotp_size'", "got null"});
  require_parts(
      import_error(R"({"tensor_parallel": {"autotp_size": 3}})", 6, c),
      {"key 'tensor_parallel.autotp_size'", "expected a divisor of model.n_head 4", "got 3"});
  require_parts(
      import_error(R"({"tensor_parallel": {"autotp_size": 4}})", 6, c),
      {"key 'tensor_parallel.autotp_size'", "expected a size dividing the world size 6, got 4"});
  Config v = c;
  v.model.vocab_size = 258;
  require_parts(
      import_error(R"({"tensor_parallel": {"autotp_size": 4}})", 4, v),
      {"key 'tensor_parallel.autotp_size'", "expected a divisor of model.vocab_size 258", "got 4"});
  require_parts(import_error(R"({"tensor_parallel": {"tp_size": 2}})", 2, c),
                {"key 'tensor_parallel.tp_size'", "DeepSpeed refuses it"});
  require_parts(import_error(R"({"tensor_parallel": 2})", 2, c),
                {"key 'tensor_parallel'", "expected a JSON object, got 2"});

  Config d = grid_config();
  auto w = import(R"({"tensor_parallel": {"autotp_size": 2, "tp_overlap_comm": true,
                      "dtype": "bf16", "preset_model": "llama", "tp": {"tp_size": 2}}})",
                  2, d, {0, 18, 6});
  REQUIRE(count_mentions(w, "'tensor_parallel.tp_overlap_comm': not honoured") == 1);
  REQUIRE(count_mentions(w, "'tensor_parallel.dtype': not honoured") == 1);
  REQUIRE(count_mentions(w, "'tensor_parallel.preset_model': not honoured") == 1);
  REQUIRE(count_mentions(w, "'tensor_parallel.tp': not read by DeepSpeed's training engine") == 1);
}

TEST_CASE("gradient clipping with a grid imports as without one", "[deepspeed][grid]") {
  // The norm is the whole model's across tensor ranks and stages
  // (zero/stages/model_parallel_norm.h), so the ds_config's value, or its
  // release's default (1.0 from 0.19.3), stands.
  const Config c = grid_config();
  Config d = c;
  import("{\"pipeline\": {\"stages\": 2},\n\"gradient_clipping\": 0.5}", 2, d);
  REQUIRE(d.train.grad_clip == 0.5);
  Config e = c;
  import(R"({"tensor_parallel": {"autotp_size": 2}})", 2, e, {0, 19, 3});
  REQUIRE(e.train.grad_clip == 1.0);
  REQUIRE(e.parallel.tensor == 2);
}

TEST_CASE("pipeline.stages: an integer is parallel.pipeline, \"auto\" leaves it",
          "[deepspeed][grid]") {
  // With a pipeline DeepSpeed counts the data-parallel ranks: 2 * 3 * (4 / 2) = 12 sequences.
  Config c = grid_config();
  auto w = import(R"({"pipeline": {"stages": 2}, "train_micro_batch_size_per_gpu": 2,
                      "gradient_accumulation_steps": 3})",
                  4, c);
  REQUIRE(c.parallel.pipeline == 2);
  REQUIRE(c.train.global_batch_tokens == 12 * 128);
  REQUIRE(grad_accum_steps(c, 4) == 3);
  REQUIRE(count_mentions(w,
                         "key 'pipeline.stages': parallel.pipeline 2 (DeepSpeed itself never "
                         "reads this key") == 1);

  Config d = grid_config();
  d.parallel.pipeline = 2;
  auto a = import(R"({"pipeline": {"stages": "auto"}})", 2, d);
  REQUIRE(d.parallel.pipeline == 2);
  REQUIRE(count_mentions(a,
                         "key 'pipeline.stages': \"auto\": the stage count comes from the "
                         "training script (PipelineModule(num_stages=...)); parallel.pipeline "
                         "2 kept") == 1);

  // Tensor and pipeline together: 8 ranks = 2 data x 2 tensor x 2 stages; the pipeline's mpu
  // counts the 2 data-parallel ranks: 1 * 2 * 2 = 4 sequences, no AutoTP batch line.
  Config g = grid_config();
  auto both = import(R"({"tensor_parallel": {"autotp_size": 2}, "pipeline": {"stages": 2},
                         "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2})",
                     8, g);
  REQUIRE(g.parallel.tensor == 2);
  REQUIRE(g.parallel.pipeline == 2);
  REQUIRE(g.train.global_batch_tokens == 4 * 128);
  REQUIRE(count_mentions(both, "counts all") == 0);

  const Config e = grid_config();
  require_parts(import_error(R"({"pipeline": {"stages": 3}})", 4, e),
                {"key 'pipeline.stages'",
                 "expected a size dividing the world size 4 over parallel.tensor 1, got 3"});
  require_parts(import_error(R"({"pipeline": {"stages": 8}})", 8, e),
                {"key 'pipeline.stages'", "expected at most model.n_layer 4", "got 8"});
  require_parts(import_error(R"({"pipeline": {"stages": "2"}})", 2, e),
                {"key 'pipeline.stages'", "expected an integer >= 1 or \"auto\", got '2'"});
  require_parts(import_error(R"({"pipeline": {"stages": 0}})", 2, e),
                {"key 'pipeline.stages'", "expected an integer >= 1, got 0"});
  require_parts(import_error(R"({"pipeline": []})", 2, e),
                {"key 'pipeline'", "expected a JSON object"});
}

TEST_CASE("pipeline: partition, seed_layers, checkpoint interval, partitioned flags",
          "[deepspeed][grid]") {
  Config c = grid_config();
  auto w = import(R"({"pipeline": {"stages": 2, "partition": "UNIFORM"}})", 2, c);
  REQUIRE(count_mentions(w, "pipeline.partition") == 0);
  for (const char* method : {"parameters", "type:transformer", "best"}) {
    Config d = grid_config();
    auto p = import(std::string(R"({"pipeline": {"partition": ")") + method + "\"}}", 2, d);
    REQUIRE(count_mentions(p, std::string("key 'pipeline.partition': \"") + method +
                                  "\" not honoured (DeepSpeed takes the method from "
                                  "PipelineModule's partition_method") == 1);
  }
  require_parts(import_error(R"({"pipeline": {"partition": 2}})", 2, grid_config()),
                {"key 'pipeline.partition'", "expected a partition method", "got 2"});

  Config s = grid_config();
  auto seeds = import(R"({"pipeline": {"seed_layers": true, "use_reentrant": false}})", 1, s);
  REQUIRE(count_mentions(seeds, "key 'pipeline.seed_layers': not honoured") == 1);
  REQUIRE(count_mentions(seeds,
                         "key 'pipeline.use_reentrant': not a pipeline key zerotrain "
                         "reads, ignored") == 1);
  Config s0 = grid_config();
  REQUIRE(count_mentions(import(R"({"pipeline": {"seed_layers": false}})", 1, s0), "seed") == 0);

  Config k1 = grid_config();
  auto one = import(R"({"pipeline": {"activation_checkpoint_interval": 1}})", 1, k1);
  REQUIRE(k1.train.recompute == "block");
  REQUIRE(count_mentions(one,
                         "key 'pipeline.activation_checkpoint_interval': train.recompute: "
                         "block (DeepSpeed's PipelineModule checkpoints each layer") == 1);
  Config k2 = grid_config();
  auto two = import(R"({"pipeline": {"activation_checkpoint_interval": 2}})", 1, k2);
  REQUIRE(k2.train.recompute == "block");
  REQUIRE(count_mentions(two, "checkpoints runs of 2 layers, keeping one input per run") == 1);
  Config kept = grid_config();
  kept.train.recompute = "attn";
  auto attn = import(R"({"pipeline": {"activation_checkpoint_interval": 1}})", 1, kept);
  REQUIRE(kept.train.recompute == "attn");
  REQUIRE(count_mentions(attn, "train.recompute: attn kept, as the zerotrain config sets it") == 1);
  Config k0 = grid_config();
  import(R"({"pipeline": {"activation_checkpoint_interval": 0}})", 1, k0);
  REQUIRE(k0.train.recompute == "none");
  require_parts(
      import_error(R"({"pipeline": {"activation_checkpoint_interval": -1}})", 1, grid_config()),
      {"key 'pipeline.activation_checkpoint_interval'", "expected an integer >= 0"});

  Config tp = grid_config();
  auto split = import(R"({"tensor_parallel": {"autotp_size": 2},
      "pipeline": {"stages": 2, "pipe_partitioned": true, "grad_partitioned": false}})",
                      4, tp);
  REQUIRE(count_mentions(split,
                         "key 'pipeline.pipe_partitioned': not honoured (DeepSpeed splits "
                         "the stage boundary's activations across the 2 tensor ranks; "
                         "zerotrain sends them whole), ignored") == 1);
  REQUIRE(count_mentions(split, "grad_partitioned") == 0);
  Config alone = grid_config();
  auto moot = import(R"({"pipeline": {"stages": 2, "grad_partitioned": true}})", 2, alone);
  REQUIRE(count_mentions(moot,
                         "key 'pipeline.grad_partitioned': moot (DeepSpeed applies it only "
                         "with tensor parallelism under a pipeline; zerotrain sends whole "
                         "gradients), ignored") == 1);
  require_parts(import_error(R"({"pipeline": {"pipe_partitioned": "yes"}})", 1, grid_config()),
                {"key 'pipeline.pipe_partitioned'", "expected true or false", "got 'yes'"});
}

TEST_CASE("the grid keys against a release's keys", "[deepspeed][grid][release_keys]") {
  auto lines = [](const std::string& json, DeepSpeedRelease release) {
    std::vector<std::string> out;
    for (const ReleaseKeyWarning& w :
         warnings_for_release(parse_json(json, "ds.json", JsonDialect::Hjson), release))
      out.push_back(std::to_string(w.line) + " " + w.key + ": " + w.text);
    return out;
  };
  const std::string tp =
      "{\"gradient_clipping\": 0,\n\"tensor_parallel\": {\"autotp_size\": 2,\n"
      "\"tp_overlap_comm\": false, \"preset_model\": \"llama\"}}";
  // Before the block: DeepSpeed ignores the unknown top-level key, one line for it.
  REQUIRE(lines(tp, {0, 16, 3}) ==
          std::vector<std::string>{"2 tensor_parallel: not a key of DeepSpeed 0.16.3 (added in "
                                   "0.16.4); DeepSpeed 0.16.3 ignores it"});
  // The block's pydantic model refuses fields it does not have yet.
  REQUIRE(lines(tp, {0, 16, 5}) ==
          std::vector<std::string>{"3 tensor_parallel.tp_overlap_comm: not a key of DeepSpeed "
                                   "0.16.5 (added in 0.16.6); DeepSpeed 0.16.5 refuses it",
                                   "3 tensor_parallel.preset_model: not a key of DeepSpeed "
                                   "0.16.5 (added in 0.18.6); DeepSpeed 0.16.5 refuses it"});
  REQUIRE(lines(tp, {0, 18, 5}).size() == 1);
  REQUIRE(lines(tp, {0, 18, 6}).empty());
  // pipeline is a plain dict: a key the release does not read is ignored, not refused.
  const std::string pipe = R"({"gradient_clipping": 0, "pipeline": {"stages": 2,
      "partition": "uniform", "seed_layers": false, "activation_checkpoint_interval": 0,
      "pipe_partitioned": true, "grad_partitioned": true}})";
  REQUIRE(lines(pipe, {0, 12, 2}) ==
          std::vector<std::string>{"3 pipeline.pipe_partitioned: not a key of DeepSpeed 0.12.2 "
                                   "(added in 0.12.3); DeepSpeed 0.12.2 ignores it",
                                   "3 pipeline.grad_partitioned: not a key of DeepSpeed 0.12.2 "
                                   "(added in 0.12.3); DeepSpeed 0.12.2 ignores it"});
  REQUIRE(lines(pipe, {0, 12, 3}).empty());
  REQUIRE(lines(pipe, kOldestReleaseRead).size() == 2);
}

}  // namespace zt
