// DeepSpeed JSON import, one test per rule (train/deepspeed/deepspeed_import.h). The fixtures are
// minimal configs of our own, each shaped like a family of public ds_configs (the HF Trainer's
// ZeRO-2/3 examples, DeepSpeedExamples, Megatron-DeepSpeed, DeepSpeed-Chat).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/support/catch.h"
#include "tests/support/deepspeed_import_support.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/config/config_schema.h"
#include "train/deepspeed/deepspeed_import.h"
#include "train/loop/lr_schedule.h"

namespace zt {
namespace {

// The HF Trainer's documented ZeRO-3 example, in shape.
const char* kHfZero3 = R"({
  "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16},
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": "auto"}},
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "none", "pin_memory": true},
    "overlap_comm": true,
    "contiguous_gradients": true,
    "sub_group_size": 1e9,
    "reduce_bucket_size": "auto",
    "stage3_prefetch_bucket_size": "auto",
    "stage3_param_persistence_threshold": "auto",
    "stage3_max_live_parameters": 1e9,
    "stage3_max_reuse_distance": 1e9,
    "stage3_gather_16bit_weights_on_model_save": true
  },
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 2000,
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto",
  "wall_clock_breakdown": false
})";

Config random_config(std::mt19937_64& rng) {
  Config c;
  c.model.n_head = 1 + int(rng() % 16);
  c.model.n_embd = c.model.n_head * (1 + int(rng() % 128));
  c.train.grad_clip = 0.25 + double(rng() % 100);
  c.train.lr = 1e-4 * (1 + double(rng() % 50));
  c.train.min_lr = c.train.lr / 10;
  c.train.warmup_steps = 1 + int(rng() % 50);
  c.train.global_batch_tokens = int64_t(c.train.micro_batch) * c.model.seq_len * 12;
  return c;
}

}  // namespace

TEST_CASE(
    "\"auto\": refused where DeepSpeed alone fails, the HF Trainer's fill-ins with "
    "train.deepspeed_auto=hf",
    "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 4; ++trial) {
    Config c = random_config(rng);
    c.train.deepspeed_auto = "hf";
    const Config before = c;
    int world = std::vector<int>{1, 2, 3, 4, 6, 12}[rng() % 6];
    std::vector<std::string> warnings = import(kHfZero3, world, c);
    const int64_t hidden = c.model.n_embd;
    REQUIRE(c.zero.stage == 3);
    REQUIRE(c.zero.reduce_bucket_size == hidden * hidden);
    REQUIRE(c.zero.stage3_prefetch_bucket_size == int64_t(0.9 * double(hidden) * double(hidden)));
    REQUIRE(c.zero.stage3_param_persistence_threshold == 10 * hidden);
    REQUIRE(count_mentions(warnings, "only by the HF Trainer") == 0);
    // The Trainer's arguments are zerotrain's: its values stay.
    REQUIRE(c.train.micro_batch == before.train.micro_batch);
    REQUIRE(c.train.global_batch_tokens == before.train.global_batch_tokens);
    REQUIRE(c.train.grad_clip == before.train.grad_clip);
    REQUIRE(c.train.lr == before.train.lr);
    REQUIRE(c.train.beta2 == before.train.beta2);
    REQUIRE(c.train.lr_schedule == "warmup_lr");
    REQUIRE(c.train.min_lr == 0);
    REQUIRE(c.train.warmup_steps == before.train.warmup_steps);
    REQUIRE(c.zero.stage3_max_live_parameters == 1000000000);
    REQUIRE(c.zero.overlap_comm);
    REQUIRE(c.zero.offload_optimizer.device == "none");  // honoured, as DeepSpeed reads it
    REQUIRE(c.zero.offload_optimizer.pin_memory);
    for (const char* ignored :
         {"'fp16.loss_scale'", "'fp16.initial_scale_power'", "'zero_optimization.sub_group_size'",
          "'zero_optimization.stage3_gather_16bit_weights_on_model_save'", "'steps_per_print'",
          "'wall_clock_breakdown'"}) {
      INFO(ignored);
      REQUIRE(count_mentions(warnings, ignored) == 1);
    }
  }
  // DeepSpeed alone fails on the batch sizes' "auto" (its first, in file order, is named).
  Config d = random_config(rng);
  require_parts(import_error(kHfZero3, 1, d),
                {"key 'gradient_accumulation_steps'", "filled in only by the HF Trainer"});
  // "auto" on a ZeRO key the Trainer leaves alone: DeepSpeed's default in both modes.
  Config c;
  c.zero.stage = 2;
  import(R"({"zero_optimization": {"stage": "auto", "allgather_bucket_size": "auto"}})", 1, c);
  REQUIRE(c.zero.stage == 0);
  REQUIRE(c.zero.allgather_bucket_size == 500000000);
  // The Trainer fills the stage-3 keys only at stage 3.
  Config e;
  e.train.deepspeed_auto = "hf";
  import(R"({"zero_optimization": {"stage": 2, "stage3_prefetch_bucket_size": "auto"}})", 1, e);
  REQUIRE(e.zero.stage3_prefetch_bucket_size == 50000000);
  require_parts(import_error(R"({"communication_data_type": "auto"})", 1, Config()),
                {"key 'communication_data_type'", "expected one of fp32, bf16, fp16"});
}

TEST_CASE("the file is read as Hjson, as DeepSpeed reads it", "[deepspeed]") {
  Config c;
  // Comments and trailing commas, as in commented copies of DeepSpeedExamples' configs.
  std::vector<std::string> warnings = import(R"({
  // ZeRO-2 with small buckets
  "train_micro_batch_size_per_gpu": 4,   # per GPU
  "zero_optimization": {
    "stage": 2,
    "reduce_bucket_size": 2e5,  /* elements */
    overlap_comm: true
  },
  "bf16": {"enabled": true,},
})",
                                             2, c);
  REQUIRE(c.zero.stage == 2);
  REQUIRE(c.zero.reduce_bucket_size == 200000);
  REQUIRE(c.zero.overlap_comm);
  REQUIRE(c.train.micro_batch == 4);
  REQUIRE(warnings.empty());
  require_parts(import_error("{\n  \"zero_optimization\": {\"stage\": \"2\n}", 1, c),
                {":2:", "JSON syntax error", "unterminated string"});
}

TEST_CASE("duplicate keys are refused", "[deepspeed]") {
  require_parts(
      import_error("{\n \"zero_optimization\": {\n  \"stage\": 2,\n  \"stage\": 3}}", 1, Config()),
      {":4: key 'zero_optimization.stage': duplicate key", "DeepSpeed refuses"});
  require_parts(
      import_error("{\"gradient_clipping\": 1,\n \"gradient_clipping\": 0.5}", 1, Config()),
      {":2: key 'gradient_clipping'", "duplicate"});
}

TEST_CASE("keys quoting control bytes keep errors and warnings one line", "[deepspeed]") {
  // A decoded "\n" in a key, the kind of input fuzz/targets/cluster_description found.
  require_parts(import_error(R"({"zero_optimization": {"a\nb": 1}})", 1, Config()),
                {"key 'zero_optimization.a\\x0ab': unknown key"});
  TestFile file(R"({"my\tkey": 1})", "ds_config.json");
  Config c;
  std::vector<std::string> warnings;
  apply_deepspeed_config(file.path, c, warnings, 1);
  bool named = false;
  for (const std::string& w : warnings) {
    CHECK(w.find('\n') == std::string::npos);
    named = named || w.find("key 'my\\x09key'") != std::string::npos;
  }
  CHECK(named);
}

TEST_CASE("null is the default where DeepSpeed reads it so, an error elsewhere", "[deepspeed]") {
  for (int stage : {2, 3}) {
    Config c;
    import(R"({"train_batch_size": null, "train_micro_batch_size_per_gpu": 4,
               "communication_data_type": null, "data_types": {"grad_accum_dtype": null},
               "zero_optimization": {"stage": )" +
               std::to_string(stage) +
               R"(, "overlap_comm": null, "offload_optimizer": null, "cpu_offload": null}})",
           2, c);
    REQUIRE(c.zero.overlap_comm == (stage == 3));  // DeepSpeed's per-stage default
    REQUIRE_FALSE(c.zero.overlap_comm_set);
    REQUIRE(c.zero.communication_data_type == "auto");
    REQUIRE(c.train.global_batch_tokens == 4 * 2 * c.model.seq_len);  // micro alone
  }
  require_parts(import_error(R"({"zero_optimization": {"stage": null}})", 1, Config()),
                {"key 'zero_optimization.stage'", "refuses null"});
  require_parts(import_error(R"({"gradient_clipping": null})", 1, Config()),
                {"key 'gradient_clipping'", "null"});
}

TEST_CASE("booleans: true/false, 0/1 and pydantic's strings", "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  const char* truthy[] = {"true", "1", "\"yes\"", "\"on\"", "\"True\"", "\"1\""};
  const char* falsy[] = {"false", "0", "\"no\"", "\"off\"", "\"FALSE\"", "\"0\""};
  for (int trial = 0; trial < 10; ++trial) {
    bool a = rng() % 2, b = rng() % 2;
    std::string json = std::string(R"({"zero_optimization": {"stage": 2, "reduce_scatter": )") +
                       (a ? truthy[rng() % 6] : falsy[rng() % 6]) +
                       ", \"overlap_comm\": " + (b ? truthy[rng() % 6] : falsy[rng() % 6]) + "}}";
    INFO(json);
    Config c;
    import(json, 1, c);
    REQUIRE(c.zero.reduce_scatter == a);
    REQUIRE(c.zero.overlap_comm == b);
  }
  require_parts(import_error(R"({"zero_optimization": {"overlap_comm": 2}})", 1, Config()),
                {"key 'zero_optimization.overlap_comm'", "expected a boolean", "got 2"});
}

TEST_CASE("the deprecated cpu_offload is read as DeepSpeed reads it", "[deepspeed]") {
  auto bf16_stage1 = [](const std::string& zero_extra) {
    return R"({"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
               "zero_optimization": {"stage": 1)" +
           zero_extra + "}}";
  };
  Config c;
  std::vector<std::string> w = import(bf16_stage1(R"(, "cpu_offload": true)"), 1, c);
  REQUIRE(count_mentions(w,
                         "'zero_optimization.cpu_offload': deprecated; read as "
                         "offload_optimizer: {device: cpu}") == 1);
  REQUIRE(c.zero.offload_optimizer.device == "cpu");
  REQUIRE(count_mentions(w, "BF16_Optimizer") == 0);  // offloaded: DeepSpeed's ZeRO optimizer
  Config d;
  REQUIRE(count_mentions(import(bf16_stage1(R"(, "cpu_offload": false)"), 1, d),
                         "BF16_Optimizer") == 1);
  require_parts(import_error(bf16_stage1(R"(, "cpu_offload": true,
                                            "offload_optimizer": {"device": "cpu"})"),
                             1, Config()),
                {"key 'zero_optimization'", "cpu_offload (deprecated) and offload_optimizer"});
}

TEST_CASE("the optimizer maps onto train.*, absent parameters taking DeepSpeed's defaults",
          "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 10; ++trial) {
    double lr = 1e-5 * (1 + double(rng() % 1000)), b1 = 0.5 + 0.001 * double(rng() % 400),
           b2 = 0.9 + 0.0001 * double(rng() % 999), eps = 1e-9 * (1 + double(rng() % 100)),
           wd = 0.01 * double(rng() % 30);
    Config c;
    c.train.min_lr = 0;
    std::string json = R"({"optimizer": {"type": ")" + std::string(rng() % 2 ? "Adam" : "adamw") +
                       R"(", "params": {"lr": )" + format_double(lr) + R"(, "betas": [)" +
                       format_double(b1) + ", " + format_double(b2) + R"(], "eps": )" +
                       format_double(eps) + R"(, "weight_decay": )" + format_double(wd) +
                       R"(, "torch_adam": true}}})";
    INFO(json);
    import(json, 1, c);
    REQUIRE(c.train.lr == lr);
    REQUIRE(c.train.beta1 == b1);
    REQUIRE(c.train.beta2 == b2);
    REQUIRE(c.train.eps == eps);
    REQUIRE(c.train.weight_decay == wd);
    REQUIRE(c.train.lr_schedule == "constant");  // no scheduler: DeepSpeed keeps lr
  }
  Config c;
  c.train.weight_decay = 0.3;
  import(R"({"optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}})", 1, c);
  REQUIRE(c.train.beta2 == 0.999);  // FusedAdam's defaults
  REQUIRE(c.train.eps == 1e-8);
  REQUIRE(c.train.weight_decay == 0.0);
  Config t;
  import(R"({"optimizer": {"type": "AdamW", "params": {"torch_adam": true}}})", 1, t);
  REQUIRE(t.train.weight_decay == 0.01);  // torch.optim.AdamW's default
  REQUIRE(t.train.lr == 1e-3);

  Config l;
  const Config before = l;
  auto w = import(R"({"optimizer": {"type": "Lamb", "params": {"lr": 0.1}}})", 1, l);
  REQUIRE(count_mentions(w, "'optimizer.type': 'Lamb' is not honoured") == 1);
  REQUIRE(l.train.lr == before.train.lr);
  Config a;
  REQUIRE(count_mentions(
              import(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})", 1, a),
              "L2 regularisation") == 1);
  require_parts(import_error(R"({"optimizer": {"type": "Adam", "params": {"max_grad_norm": 1}}})",
                             1, Config()),
                {"key 'optimizer.params.max_grad_norm'", "gradient_clipping"});
  require_parts(
      import_error(R"({"optimizer": {"type": "Adam", "params": {"betas": [0.9]}}})", 1, Config()),
      {"key 'optimizer.params.betas'", "expected [beta1, beta2]"});
}

TEST_CASE("WarmupLR, WarmupDecayLR and WarmupCosineLR set the schedule exactly", "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 10; ++trial) {
    Config c;
    c.train.steps = 20 + int(rng() % 100);
    const int warmup = 1 + int(rng() % 20);
    const std::string steps = std::to_string(c.train.steps), w = std::to_string(warmup);
    Config a = c;
    import(R"({"optimizer": {"type": "AdamW", "params": {"lr": 5e-4}},
               "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-5,
               "warmup_max_lr": 2e-3, "warmup_num_steps": )" +
               w + R"(, "total_num_steps": )" + steps + R"(, "warmup_type": "linear"}}})",
           1, a);
    REQUIRE(a.train.lr_schedule == "warmup_decay_lr");
    REQUIRE(a.train.lr == 2e-3);  // the scheduler sets the lr, not the optimizer
    REQUIRE(a.train.min_lr == 1e-5);
    REQUIRE(a.train.warmup_steps == warmup);
    REQUIRE(a.train.warmup_type == "linear");
    REQUIRE(learning_rate(a.train, 0) == 1e-5);  // DeepSpeed's step 0: warmup_min_lr
    REQUIRE(learning_rate(a.train, c.train.steps + 1) == Approx(1e-5));  // iteration T

    Config b = c;
    import(R"({"optimizer": {"type": "AdamW", "params": {"lr": 4e-4}},
               "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": )" +
               steps + R"(, "warmup_num_steps": )" + w +
               R"(, "warmup_min_ratio": 0.1, "cos_min_ratio": 0.05}}})",
           1, b);
    REQUIRE(b.train.lr_schedule == "warmup_cosine_lr");
    REQUIRE(b.train.warmup_type == "log");  // DeepSpeed's default
    REQUIRE(b.train.warmup_start_lr == Approx(0.1 * 4e-4));
    REQUIRE(b.train.min_lr == Approx(0.05 * 4e-4));
    REQUIRE(learning_rate(b.train, 0) == 0.0);  // DeepSpeed's first step runs at lr 0

    Config d = c;
    import(R"({"optimizer": {"type": "AdamW", "params": {"lr": 7e-4}},
               "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": )" +
               w + "}}}",
           1, d);
    REQUIRE(d.train.lr_schedule == "warmup_lr");
    REQUIRE(d.train.lr == 7e-4);  // warmup_max_lr defaults to the optimizer's lr
    REQUIRE(d.train.min_lr == 0);
  }
  Config e;
  e.train.steps = 100;
  auto w = import(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 500}}})",
                  1, e);
  REQUIRE(count_mentions(w, "set train.steps=500") == 1);
  require_parts(
      import_error(R"({"scheduler": {"type": "WarmupCosineLR", "params": {}}})", 1, Config()),
      {"key 'scheduler.params.total_num_steps'", "needs total_num_steps"});
  Config f;
  auto o = import(R"({"scheduler": {"type": "OneCycle", "params": {}}})", 1, f);
  REQUIRE(count_mentions(o, "'scheduler.type': 'OneCycle' is not honoured") == 1);
  REQUIRE(f.train.lr_schedule == "cosine");
}

TEST_CASE("every fp16 sub-key gets its own warning", "[deepspeed]") {
  Config c;
  auto w = import(R"({"fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000,
                     "initial_scale_power": 16, "hysteresis": 2, "min_loss_scale": 1}})",
                  1, c);
  REQUIRE(w.size() == 6);
  for (const char* key :
       {"'fp16.enabled'", "'fp16.loss_scale'", "'fp16.loss_scale_window'",
        "'fp16.initial_scale_power'", "'fp16.hysteresis'", "'fp16.min_loss_scale'"}) {
    INFO(key);
    REQUIRE(count_mentions(w, key) == 1);
  }
  require_parts(import_error(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", 1, c),
                {"fp16 and bf16 are both enabled"});
  Config d;
  REQUIRE(count_mentions(import(R"({"zero_optimization": {"stage": 2}})", 1, d),
                         "would train in fp32") == 1);
}

TEST_CASE("activation_checkpointing means block recompute; its flags set true are warned about",
          "[deepspeed]") {
  // Megatron-DeepSpeed's shape of the block.
  Config c;
  auto w = import(R"({"activation_checkpointing": {"partition_activations": true,
                     "contiguous_memory_optimization": false, "cpu_checkpointing": true,
                     "number_checkpoints": null, "synchronize_checkpoint_boundary": false,
                     "profile": false}})",
                  1, c);
  CHECK(c.train.recompute == "block");
  REQUIRE(count_mentions(w, "activation_checkpointing") == 3);
  CHECK(count_mentions(w, "'activation_checkpointing': train.recompute: block") == 1);
  CHECK(count_mentions(w, "'activation_checkpointing.partition_activations': not honoured") == 1);
  CHECK(count_mentions(w, "'activation_checkpointing.cpu_checkpointing': not honoured") == 1);
  // A level the zerotrain config chose is kept; an empty block still means recompute.
  Config mlp;
  mlp.train.recompute = "mlp";
  w = import(R"({"activation_checkpointing": {"number_checkpoints": 4, "typo": 1}})", 1, mlp);
  CHECK(mlp.train.recompute == "mlp");
  CHECK(count_mentions(w, "train.recompute: mlp kept") == 1);
  CHECK(count_mentions(w, "'activation_checkpointing.number_checkpoints': not honoured") == 1);
  CHECK(count_mentions(w, "'activation_checkpointing.typo': not a DeepSpeed") == 1);
  Config empty;
  import(R"({"activation_checkpointing": {}})", 1, empty);
  CHECK(empty.train.recompute == "block");
  // Without the block the zerotrain config decides, as the model code does under DeepSpeed.
  Config absent;
  import(R"({"zero_optimization": {"stage": 3}})", 1, absent);
  CHECK(absent.train.recompute == "none");
  require_parts(import_error(R"({"activation_checkpointing": true})", 1, Config()),
                {"activation_checkpointing"});
  require_parts(
      import_error(R"({"activation_checkpointing": {"cpu_checkpointing": "maybe"}})", 1, Config()),
      {"activation_checkpointing.cpu_checkpointing"});
}

TEST_CASE("keys absent from the JSON take DeepSpeed's defaults for what it governs",
          "[deepspeed]") {
  Config c;
  c.zero.stage = 2;
  c.zero.reduce_bucket_size = 1000;
  c.zero.stage3_param_persistence_threshold = 7;
  c.zero.communication_data_type = "fp32";
  c.zero.native_reduce_scatter = true;  // zerotrain's own: kept
  c.train.grad_clip = 1.0;
  const Config before = c;
  import(R"({"bf16": {"enabled": true}})", 1, c);
  REQUIRE(c.zero.stage == 0);
  REQUIRE(c.zero.reduce_bucket_size == 500000000);
  REQUIRE(c.zero.stage3_param_persistence_threshold == 100000);
  REQUIRE(c.zero.communication_data_type == "auto");
  REQUIRE(c.zero.native_reduce_scatter);
  REQUIRE(c.train.grad_clip == 0);  // DeepSpeed's gradient_clipping default
  // No optimizer or scheduler block: the client's (zerotrain's) optimizer and schedule.
  REQUIRE(c.train.lr == before.train.lr);
  REQUIRE(c.train.lr_schedule == "cosine");
  REQUIRE(c.train.micro_batch == before.train.micro_batch);
}

TEST_CASE("batch sizes follow DeepSpeed's arithmetic; a mismatch names each number's source",
          "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  for (int trial = 0; trial < 20; ++trial) {
    int world = 1 + int(rng() % 8);
    int64_t micro = 1 + int64_t(rng() % 16), accumulation = 1 + int64_t(rng() % 16);
    int64_t batch = micro * accumulation * world;
    std::string tbs = "\"train_batch_size\": " + std::to_string(batch);
    std::string mbs = "\"train_micro_batch_size_per_gpu\": " + std::to_string(micro);
    std::string gas = "\"gradient_accumulation_steps\": " + std::to_string(accumulation);
    INFO("world " << world << " micro " << micro << " accumulation " << accumulation);
    struct Form {
      std::string json;
      int64_t micro, accumulation;
    };
    for (const Form& form :
         {Form{tbs + ", " + mbs + ", " + gas, micro, accumulation},
          Form{tbs + ", " + mbs, micro, accumulation}, Form{tbs + ", " + gas, micro, accumulation},
          Form{mbs + ", " + gas, micro, accumulation}, Form{tbs, batch / world, 1},
          Form{mbs, micro, 1}}) {
      INFO(form.json);
      Config c;
      import("{\"bf16\": {\"enabled\": true}, " + form.json + "}", world, c);
      REQUIRE(c.train.micro_batch == form.micro);
      REQUIRE(c.train.global_batch_tokens ==
              form.micro * form.accumulation * world * c.model.seq_len);
      REQUIRE(grad_accum_steps(c, world) == form.accumulation);
    }
  }
  Config c;
  require_parts(
      import_error("{\"train_batch_size\": 48,\n \"train_micro_batch_size_per_gpu\": 4,"
                   "\n \"gradient_accumulation_steps\": 8}",
                   2, c),
      {":1: key 'train_batch_size'", "4*8*2 = 64", "train_micro_batch_size_per_gpu 4: line 2",
       "gradient_accumulation_steps 8: line 3", "world size 2: the ranks started",
       "got 48 (line 1)"});
  c.train.micro_batch = 5;
  c.train.deepspeed_auto = "hf";
  require_parts(
      import_error(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto"})", 2, c),
      {"expected a multiple of", "5*2 = 10",
       "train_micro_batch_size_per_gpu 5: train.micro_batch (per_device_train_batch_size) "
       "(\"auto\")",
       "got 32"});
  c.train.deepspeed_auto = "deepspeed";
  require_parts(import_error(R"({"gradient_accumulation_steps": 4})", 1, Config()),
                {"key 'gradient_accumulation_steps'", "alone does not fix the batch"});
  require_parts(import_error(R"({"train_micro_batch_size_per_gpu": 0})", 1, Config()),
                {"key 'train_micro_batch_size_per_gpu'", "got 0"});
}

TEST_CASE("zero_optimization: honoured keys map, known ones warn, unknown ones are refused",
          "[deepspeed]") {
  std::mt19937_64 rng(test_seed());
  const int64_t n = 1 + int64_t(rng() % 100000000);
  Config c;
  auto w = import(R"({"communication_data_type": "FP32", "zero_optimization": {"stage": 2,
        "reduce_bucket_size": )" +
                      std::to_string(n) +
                      R"(, "allgather_bucket_size": "5e8", "round_robin_gradients": true,
        "use_multi_rank_bucket_allreduce": false, "contiguous_gradients": 0,
        "prefetch_bucket_size": 7, "param_persistence_threshold": 8,
        "max_live_parameters": 9, "stage3_max_reuse_distance": 10,
        "allgather_partitions": true, "ignore_unused_parameters": true}})",
                  1, c);
  REQUIRE(c.zero.reduce_bucket_size == n);
  REQUIRE(c.zero.allgather_bucket_size == 500000000);
  REQUIRE(c.zero.round_robin_gradients);
  REQUIRE_FALSE(c.zero.use_multi_rank_bucket_allreduce);
  REQUIRE_FALSE(c.zero.contiguous_gradients);
  REQUIRE(c.zero.communication_data_type == "fp32");
  REQUIRE(c.zero.stage3_prefetch_bucket_size == 7);
  REQUIRE(c.zero.stage3_param_persistence_threshold == 8);
  REQUIRE(c.zero.stage3_max_live_parameters == 9);
  REQUIRE(c.zero.stage3_max_reuse_distance == 10);
  REQUIRE(count_mentions(w, "'zero_optimization.allgather_partitions': not honoured") == 1);
  REQUIRE(count_mentions(w, "'zero_optimization.ignore_unused_parameters': not honoured") == 1);
  require_parts(import_error(R"({"zero_optimization": {"reduce_bucket_sise": 5}})", 1, Config()),
                {"key 'zero_optimization.reduce_bucket_sise'", "unknown key",
                 "did you mean 'reduce_bucket_size'"});
  require_parts(import_error(R"({"zero_optimization": {"stage": 5}})", 1, Config()),
                {"expected an integer in [0, 3], got 5"});
  require_parts(import_error(R"({"zero_optimization": {"reduce_bucket_size": 1.5}})", 1, Config()),
                {"expected an integer, got 1.5"});
  require_parts(import_error(R"({"zero_optimization": 2})", 1, Config()),
                {"key 'zero_optimization'", "expected a JSON object, got 2"});
  Config old;
  import(R"({"zero_optimization": true})", 1, old);  // DeepSpeed's deprecated form
  REQUIRE(old.zero.stage == 1);
}

TEST_CASE("bf16 + stage 1 + fp32 gradient accumulation is flagged as DeepSpeed's BF16_Optimizer",
          "[deepspeed]") {
  auto config = [](int stage, const std::string& dtype, const std::string& offload) {
    return R"({"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": ")" + dtype +
           R"("}, "zero_optimization": {"stage": )" + std::to_string(stage) + offload + "}}";
  };
  Config c;
  std::vector<std::string> warnings = import(config(1, "fp32", ""), 1, c);
  REQUIRE(warnings.size() == 1);
  require_parts(warnings[0],
                {"key 'data_types.grad_accum_dtype'", "none of the four stage-1/2 gradient paths"});
  for (const std::string& other :
       {config(2, "fp32", ""), config(1, "bf16", ""),
        config(1, "float32", R"(, "offload_optimizer": {"device": "cpu"})")}) {
    INFO(other);
    Config d;
    REQUIRE(count_mentions(import(other, 1, d), "BF16_Optimizer") == 0);
  }
}

TEST_CASE("a battery of public ds_config shapes imports", "[deepspeed]") {
  // Each is our own minimal config in the shape of a public family.
  const char* battery[] = {
      // DeepSpeedExamples, bing_bert / cifar style: fp16 with loss scaling, ZeRO-1.
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "steps_per_print": 10,
          "optimizer": {"type": "Adam", "params": {"lr": 0.001, "betas": [0.8, 0.999], "eps": 1e-8,
          "weight_decay": 3e-7}}, "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0,
          "warmup_max_lr": 0.001, "warmup_num_steps": 1000}}, "gradient_clipping": 1.0,
          "prescale_gradients": false, "fp16": {"enabled": true, "fp16_master_weights_and_grads": false,
          "loss_scale": 0, "loss_scale_window": 500, "hysteresis": 2, "min_loss_scale": 1,
          "initial_scale_power": 15}, "wall_clock_breakdown": false,
          "zero_optimization": {"stage": 1, "allgather_partitions": true, "reduce_scatter": true,
          "allgather_bucket_size": 50000000, "reduce_bucket_size": 50000000, "overlap_comm": true,
          "contiguous_gradients": true, "cpu_offload": false}})",
      // Megatron-DeepSpeed's GPT pretraining config: bf16, ZeRO-1, no optimizer block.
      R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "steps_per_print": 10,
          "zero_optimization": {"stage": 1}, "gradient_clipping": 1.0, "prescale_gradients": false,
          "bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
          "wall_clock_breakdown": false})",
      // DeepSpeed-Chat's training config.
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "steps_per_print": 10,
          "zero_optimization": {"stage": 3, "offload_param": {"device": "none"},
          "offload_optimizer": {"device": "none"}, "stage3_param_persistence_threshold": 1e4,
          "stage3_max_live_parameters": 3e7, "stage3_prefetch_bucket_size": 3e7,
          "memory_efficient_linear": false}, "fp16": {"enabled": true, "loss_scale_window": 100},
          "gradient_clipping": 1.0, "prescale_gradients": false, "wall_clock_breakdown": false,
          "hybrid_engine": {"enabled": false, "max_out_tokens": 512}})",
      // The HF Trainer's ZeRO-2 example with CPU offload.
      R"({"fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000,
          "initial_scale_power": 16, "hysteresis": 2, "min_loss_scale": 1},
          "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
          "weight_decay": "auto"}}, "scheduler": {"type": "WarmupDecayLR", "params": {
          "warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": "auto",
          "total_num_steps": "auto"}}, "zero_optimization": {"stage": 2, "offload_optimizer":
          {"device": "cpu", "pin_memory": true}, "allgather_partitions": true,
          "allgather_bucket_size": 2e8, "overlap_comm": true, "reduce_scatter": true,
          "reduce_bucket_size": 2e8, "contiguous_gradients": true}, "gradient_accumulation_steps":
          "auto", "gradient_clipping": "auto", "train_batch_size": "auto",
          "train_micro_batch_size_per_gpu": "auto"})",
      // A DeepSpeed unit-test style config with communication_data_type and comms logging.
      R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
          "communication_data_type": "fp32", "bf16": {"enabled": true},
          "comms_logger": {"enabled": true, "verbose": false}, "zero_optimization": {"stage": 2,
          "round_robin_gradients": true, "use_multi_rank_bucket_allreduce": false}})",
  };
  for (const char* json : battery) {
    INFO(json);
    Config c;
    c.train.global_batch_tokens = 4 * 128 * 16;  // divisible at world 4 for the "auto" config
    // The HF Trainer's example needs its resolver: DeepSpeed alone fails on its "auto".
    if (std::string(json).find("\"auto\"") != std::string::npos) c.train.deepspeed_auto = "hf";
    std::vector<std::string> warnings = import(json, 4, c);
    CHECK_NOTHROW(validate_for_world(c, 4));
  }
}

TEST_CASE("bad DeepSpeed files give one-line errors naming file and key", "[deepspeed]") {
  Config c;
  {
    std::vector<std::string> warnings;
    std::string missing = "/nonexistent/zt_ds.json";
    try {
      apply_deepspeed_config(missing, c, warnings, 1);
      FAIL("no error for a missing file");
    } catch (const ConfigError& e) {
      require_parts(e.what(), {missing, "cannot open DeepSpeed config"});
    }
  }
  require_parts(import_error("[1, 2]", 1, c), {"expected a JSON object at the top level"});
  require_parts(
      import_error("{\n  \"zero_optimization\": {\n    \"stage\": \"two\"\n  }\n}\n", 1, c),
      {":3: key 'zero_optimization.stage'", "expected an integer, got 'two'"});
  require_parts(import_error(R"({"bf16": {"enabled": "yes please"}})", 1, c),
                {"key 'bf16.enabled'", "got 'yes please'"});
  require_parts(import_error(R"({"data_types": {"grad_accum_dtype": "fp8"}})", 1, c),
                {"key 'data_types.grad_accum_dtype'", "got 'fp8'"});
}

}  // namespace zt
