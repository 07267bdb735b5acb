// "auto" in a ds_config: the HF Trainer's rules (train/deepspeed/hf_auto_values.h) with
// train.deepspeed_auto: hf, DeepSpeed's own reading otherwise, and the min_lr rule for an
// imported lr below the YAML's floor. Expected values are written out by hand from the rules
// (transformers 4.45.0-5.23.0, HfTrainerDeepSpeedConfig; Python's int(0.9 * h * h)).
#include <algorithm>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"

namespace zt {
namespace {

size_t mentions(const std::vector<std::string>& lines, const std::string& needle) {
  return size_t(std::count_if(lines.begin(), lines.end(), [&](const std::string& w) {
    return w.find(needle) != std::string::npos;
  }));
}

struct Imported {
  Config c;
  std::vector<std::string> warnings;
  std::string dtype;
};

Imported import_with(const std::string& json, Config c, int world,
                     DeepSpeedRelease release = kImportAssumedRelease) {
  TestFile file(json, "ds_config.json");
  Imported out{c, {}, ""};
  apply_deepspeed_config(file.path, out.c, out.warnings, world, &out.dtype, release);
  for (const std::string& w : out.warnings) CHECK(w.find('\n') == std::string::npos);
  return out;
}

std::string error_with(const std::string& json, Config c, int world,
                       DeepSpeedRelease release = kImportAssumedRelease) {
  TestFile file(json, "ds_config.json");
  std::vector<std::string> warnings;
  const std::string message = error_of<ConfigError>(
      [&] { apply_deepspeed_config(file.path, c, warnings, world, nullptr, release); });
  if (message.empty()) FAIL("no ConfigError for " << json);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.rfind(file.path + ":", 0) == 0);
  return message;
}

// GPT-2 small's width, and train.* values unlike every DeepSpeed default.
Config gpt2_small(const char* resolver) {
  Config c;
  c.model.n_embd = 768;
  c.model.n_head = 12;
  c.model.seq_len = 128;
  c.train.micro_batch = 4;
  c.train.global_batch_tokens = 4 * 128 * 2 * 3;  // world 2, accumulation 3
  c.train.lr = 3e-4;
  c.train.min_lr = 3e-5;
  c.train.beta1 = 0.8;
  c.train.beta2 = 0.95;
  c.train.eps = 1e-6;
  c.train.weight_decay = 0.05;
  c.train.grad_clip = 0.5;
  c.train.steps = 500;
  c.train.warmup_steps = 30;
  c.train.deepspeed_auto = resolver;
  return c;
}

const char* kTrainerZero3 = R"({
  "bf16": {"enabled": "auto"},
  "fp16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                "warmup_num_steps": "auto", "total_num_steps": "auto"}},
  "zero_optimization": {
    "reduce_bucket_size": "auto",
    "stage3_prefetch_bucket_size": "auto",
    "stage3_param_persistence_threshold": "auto",
    "stage": 3
  },
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto"
})";

}  // namespace

TEST_CASE("hf: every \"auto\" the Trainer fills takes its value, by hand", "[deepspeed][hf_auto]") {
  Imported r = import_with(kTrainerZero3, gpt2_small("hf"), 2);
  const ZeroConfig& z = r.c.zero;
  REQUIRE(z.stage == 3);  // the stage comes after the keys: the stage-3 rules still apply
  REQUIRE(z.reduce_bucket_size == 589824);                // 768 * 768
  REQUIRE(z.stage3_prefetch_bucket_size == 530841);       // int(0.9 * 768 * 768) = int(530841.6)
  REQUIRE(z.stage3_param_persistence_threshold == 7680);  // 10 * 768
  const TrainConfig& t = r.c.train;
  REQUIRE(t.micro_batch == 4);
  REQUIRE(t.global_batch_tokens == 4 * 128 * 2 * 3);  // train_batch_size = 2 * 4 * 3 = 24
  REQUIRE(t.grad_clip == 0.5);
  REQUIRE(t.lr == 3e-4);   // warmup_max_lr: learning_rate
  REQUIRE(t.min_lr == 0);  // warmup_min_lr: the Trainer's 0
  REQUIRE(t.beta1 == 0.8);
  REQUIRE(t.beta2 == 0.95);
  REQUIRE(t.eps == 1e-6);
  REQUIRE(t.weight_decay == 0.05);
  REQUIRE(t.warmup_steps == 30);
  REQUIRE(t.lr_schedule == "warmup_decay_lr");
  REQUIRE(r.dtype == "bf16");  // bf16 "auto": zerotrain's GPU precision; fp16 "auto": off
  REQUIRE(mentions(r.warnings, "zerotrain's schedule spans") == 0);  // total_num_steps: steps
  // The summary line: the resolver in force, and every key it filled, in the import's order.
  REQUIRE(mentions(r.warnings,
                   "\"auto\" resolved by the HF Trainer's rules (train.deepspeed_auto: hf; "
                   "transformers 4.45.0-5.23.0), then DeepSpeed 0.14.4's; filled in: "
                   "bf16.enabled = true, fp16.enabled = false, "
                   "zero_optimization.reduce_bucket_size = 589824, "
                   "zero_optimization.stage3_prefetch_bucket_size = 530841, "
                   "zero_optimization.stage3_param_persistence_threshold = 7680, "
                   "gradient_accumulation_steps = 3, gradient_clipping = 0.5, "
                   "train_batch_size = 24, train_micro_batch_size_per_gpu = 4, "
                   "optimizer.params.lr = 3e-04, optimizer.params.betas = [0.8, 0.95], "
                   "optimizer.params.eps = 1e-06, optimizer.params.weight_decay = 0.05, "
                   "scheduler.params.warmup_min_lr = 0, scheduler.params.warmup_max_lr = 3e-04, "
                   "scheduler.params.warmup_num_steps = 30, "
                   "scheduler.params.total_num_steps = 500") == 1);

  // Widths whose 0.9 h^2 is whole, and GPT-2 XL's; warmup 0 fills max(1, 0) = 1.
  for (auto [hidden, prefetch] :
       {std::pair<int, int64_t>{1000, 900000}, {4096, 15099494}, {130, 15210}, {1600, 2304000}}) {
    Config c = gpt2_small("hf");
    c.model.n_embd = hidden;
    c.model.n_head = hidden == 4096 ? 16 : 10;
    c.train.warmup_steps = 0;
    INFO("n_embd " << hidden);
    Imported w = import_with(kTrainerZero3, c, 2);
    REQUIRE(w.c.zero.reduce_bucket_size == int64_t(hidden) * hidden);
    REQUIRE(w.c.zero.stage3_prefetch_bucket_size == prefetch);
    REQUIRE(w.c.zero.stage3_param_persistence_threshold == 10 * hidden);
    REQUIRE(w.c.train.warmup_steps == 1);
  }
}

TEST_CASE("hf: keys the Trainer does not fill keep DeepSpeed's reading", "[deepspeed][hf_auto]") {
  // Below stage 3 the Trainer leaves the stage-3 keys "auto"; DeepSpeed drops them.
  Imported s2 =
      import_with(R"({"zero_optimization": {"stage": 2, "stage3_prefetch_bucket_size": "auto",
                                "reduce_bucket_size": "auto"}})",
                  gpt2_small("hf"), 1);
  REQUIRE(s2.c.zero.stage3_prefetch_bucket_size == 50000000);
  REQUIRE(s2.c.zero.reduce_bucket_size == 589824);  // filled at every stage
  REQUIRE(mentions(s2.warnings,
                   "key 'zero_optimization.stage3_prefetch_bucket_size': \"auto\": "
                   "the HF Trainer fills this key only at ZeRO stage 3") == 1);
  // The Trainer looks keys up by their JSON names only: the field-name alias is not filled.
  Imported alias = import_with(R"({"zero_optimization": {"stage": 3, "prefetch_bucket_size": "auto",
                                   "allgather_bucket_size": "auto"}})",
                               gpt2_small("hf"), 1);
  REQUIRE(alias.c.zero.stage3_prefetch_bucket_size == 50000000);
  REQUIRE(alias.c.zero.allgather_bucket_size == 500000000);
  REQUIRE(mentions(alias.warnings,
                   "key 'zero_optimization.prefetch_bucket_size': \"auto\": the "
                   "HF Trainer has no rule") == 1);
  REQUIRE(mentions(alias.warnings,
                   "DeepSpeed's default: zero_optimization.prefetch_bucket_size, "
                   "zero_optimization.allgather_bucket_size") == 1);
  // Where DeepSpeed would fail on the "auto" the Trainer leaves, the import refuses it.
  for (const char* json :
       {R"({"optimizer": {"type": "Adam", "params": {"torch_adam": "auto"}}})",
        R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "auto"}}})"}) {
    INFO(json);
    require_parts(error_with(json, gpt2_small("hf"), 1),
                  {"\"auto\": the HF Trainer has no rule for this key"});
  }
  require_parts(error_with(R"({"scheduler": {"type": "WarmupCosineLR", "params":
                              {"total_num_steps": 10, "warmup_min_lr": "auto"}}})",
                           gpt2_small("hf"), 1),
                {"key 'scheduler.params.warmup_min_lr'", "WarmupCosineLR takes no such parameter"});
}

TEST_CASE("deepspeed: \"auto\" where DeepSpeed alone fails is refused, one line naming the key",
          "[deepspeed][hf_auto]") {
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps", "gradient_clipping"}) {
    INFO(key);
    std::string json =
        std::string(R"({"train_micro_batch_size_per_gpu": 4, ")") + key + R"(": "auto"})";
    if (std::string(key) == "train_micro_batch_size_per_gpu")
      json = R"({"train_micro_batch_size_per_gpu": "auto"})";
    require_parts(error_with(json, gpt2_small("deepspeed"), 2),
                  {std::string("key '") + key + "'", "filled in only by the HF Trainer",
                   "train.deepspeed_auto=hf"});
  }
  require_parts(
      error_with(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": "auto"}}})",
                 gpt2_small("deepspeed"), 1),
      {"key 'optimizer.params.betas'", "filled in only by the HF Trainer"});
  require_parts(
      error_with(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}})",
                 gpt2_small("deepspeed"), 1),
      {"key 'scheduler.params.warmup_num_steps'", "filled in only by the HF Trainer"});
  // zero_optimization drops "auto" in every release: DeepSpeed's defaults.
  Imported r = import_with(R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
                               "stage3_param_persistence_threshold": "auto"}})",
                           gpt2_small("deepspeed"), 1);
  REQUIRE(r.c.zero.reduce_bucket_size == 500000000);
  REQUIRE(r.c.zero.stage3_param_persistence_threshold == 100000);
  REQUIRE(mentions(r.warnings,
                   "\"auto\" resolved by DeepSpeed 0.14.4's own reading "
                   "(train.deepspeed_auto: deepspeed); DeepSpeed's default: "
                   "zero_optimization.reduce_bucket_size, "
                   "zero_optimization.stage3_param_persistence_threshold") == 1);
}

TEST_CASE("deepspeed: fp16/bf16 \"auto\" is on before DeepSpeed 0.17.1, off from it",
          "[deepspeed][hf_auto]") {
  const std::string bf16 = R"({"bf16": {"enabled": "auto"}})";
  Imported old = import_with(bf16, gpt2_small("deepspeed"), 1, {0, 17, 0});
  REQUIRE(old.dtype == "bf16");
  REQUIRE(mentions(old.warnings,
                   "read as on (DeepSpeed before 0.17.1 takes the string as true): "
                   "bf16.enabled") == 1);
  Imported now = import_with(bf16, gpt2_small("deepspeed"), 1, {0, 17, 1});
  REQUIRE(now.dtype == "fp32");
  REQUIRE(mentions(now.warnings, "DeepSpeed's default: bf16.enabled") == 1);
  // Both "auto" before 0.17.1: both on, which DeepSpeed asserts against.
  require_parts(error_with(R"({"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})",
                           gpt2_small("deepspeed"), 1, {0, 14, 4}),
                {"fp16 and bf16 are both enabled"});
  Imported both = import_with(R"({"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})",
                              gpt2_small("deepspeed"), 1, {0, 19, 8});
  REQUIRE(both.dtype == "fp32");
  // The Trainer fills bf16 only under its own key name, not DeepSpeed's older "bfloat16".
  Imported hf_old = import_with(R"({"bfloat16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})",
                                gpt2_small("hf"), 1, {0, 14, 4});
  REQUIRE(hf_old.dtype == "bf16");  // bfloat16 "auto" truthy in 0.14.4; fp16 filled false
}

TEST_CASE("min_lr: an imported lr below the YAML's floor", "[deepspeed][hf_auto]") {
  Config yaml;  // min_lr 1e-4, lr 1e-3, cosine
  REQUIRE(yaml.train.min_lr == 1e-4);
  // BingBertSquad's shape: Adam at 3e-5, no scheduler, fp16: DeepSpeed runs it at a constant lr.
  Imported squad = import_with(R"({
  "train_batch_size": 24,
  "train_micro_batch_size_per_gpu": 3,
  "optimizer": {"type": "Adam", "params": {"lr": 3e-5, "weight_decay": 0.0, "bias_correction": false}},
  "gradient_clipping": 1.0,
  "fp16": {"enabled": true}
})",
                               yaml, 8);
  REQUIRE(squad.c.train.lr == 3e-5);
  REQUIRE(squad.c.train.lr_schedule == "constant");
  REQUIRE(squad.c.train.min_lr == 3e-5);
  REQUIRE(mentions(squad.warnings,
                   "key 'optimizer': train.min_lr 1e-04 is above the imported lr "
                   "3e-05; train.min_lr = 3e-05 (DeepSpeed's constant lr") == 1);
  // ZenFlow's shape: AdamW at 2e-5, stage 2 offloaded, no scheduler. Under hf the Trainer builds
  // its own scheduler: zerotrain's cosine stays, floored at the lr.
  const std::string zenflow = R"({
  "train_batch_size": 8,
  "gradient_accumulation_steps": 1,
  "bf16": {"enabled": true},
  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true},
                        "zenflow": {"topk_ratio": 0.05, "update_interval": 4}},
  "optimizer": {"type": "AdamW", "params": {"lr": 2e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}},
  "gradient_clipping": 1.0
})";
  Config hf = yaml;
  hf.train.deepspeed_auto = "hf";
  Imported zf = import_with(zenflow, hf, 2);
  REQUIRE(zf.c.train.lr == 2e-5);
  REQUIRE(zf.c.train.lr_schedule == "cosine");
  REQUIRE(zf.c.train.min_lr == 2e-5);
  REQUIRE(mentions(zf.warnings, "train.lr_schedule cosine keeps its shape") == 1);
  // A floor at or below the lr is the YAML's, untouched; a schedule the ds_config sets takes
  // its own floor (warmup_min_lr).
  Config low = yaml;
  low.train.min_lr = 1e-6;
  REQUIRE(import_with(zenflow, low, 2).c.train.min_lr == 1e-6);
  Imported decay = import_with(R"({"optimizer": {"type": "Adam", "params": {"lr": 3e-5}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-6, "warmup_max_lr": 3e-5,
                  "total_num_steps": 200}}})",
                               yaml, 1);
  REQUIRE(decay.c.train.min_lr == 1e-6);
  REQUIRE(mentions(decay.warnings, "is above the imported lr") == 0);
}

}  // namespace zt
