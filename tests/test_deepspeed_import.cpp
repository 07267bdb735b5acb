// DeepSpeed JSON import: HF-style "auto" values, string and scientific
// numbers, DeepSpeed's batch arithmetic, one warning per ignored key, the
// BF16_Optimizer case, and one-line errors for bad files.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/catch.h"
#include "tests/test_support.h"
#include "train/config.h"
#include "train/deepspeed_import.h"

namespace zt {
namespace {

class TempJson {
 public:
  explicit TempJson(const std::string& text) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("zt_test_ds_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".json"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempJson() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::mt19937_64 seeded_rng() {
  uint64_t seed = std::random_device{}();
  UNSCOPED_INFO("rng seed " << seed);
  return std::mt19937_64(seed);
}

// How many warnings mention `needle`.
size_t count_mentions(const std::vector<std::string>& warnings, const std::string& needle) {
  return size_t(std::count_if(warnings.begin(), warnings.end(), [&](const std::string& w) {
    return w.find(needle) != std::string::npos;
  }));
}

std::vector<std::string> import(const std::string& json, int world, Config& c) {
  TempJson file(json);
  std::vector<std::string> warnings;
  apply_deepspeed_config(file.path(), c, warnings, world);
  for (const std::string& w : warnings) {
    INFO(w);
    CHECK(w.find('\n') == std::string::npos);
    CHECK(w.rfind(file.path() + ":", 0) == 0);
  }
  return warnings;
}

std::string import_error(const std::string& json, int world, Config c) {
  TempJson file(json);
  std::vector<std::string> warnings;
  try {
    apply_deepspeed_config(file.path(), c, warnings, world);
  } catch (const ConfigError& e) {
    std::string message = e.what();
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.rfind(file.path() + ":", 0) == 0);
    return message;
  }
  FAIL("no ConfigError for " << json);
  return "";
}

// An HF Trainer style config (the shape of its documented ZeRO-2/3 examples).
std::string hf_config(int stage) {
  return R"({
  "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16},
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto"}},
  "zero_optimization": {
    "stage": )" +
         std::to_string(stage) + R"(,
    "offload_optimizer": {"device": "none", "pin_memory": true},
    "allgather_partitions": true,
    "allgather_bucket_size": "2e8",
    "reduce_scatter": true,
    "reduce_bucket_size": "auto",
    "contiguous_gradients": true,
    "round_robin_gradients": true,
    "stage3_prefetch_bucket_size": "auto",
    "stage3_param_persistence_threshold": "auto",
    "stage3_max_live_parameters": 1e9,
    "stage3_max_reuse_distance": "1e9"
  },
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 2000,
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto",
  "wall_clock_breakdown": false
})";
}

}  // namespace

TEST_CASE("an HF-style config with auto values imports, warning once per ignored key",
          "[deepspeed]") {
  auto rng = seeded_rng();
  for (int stage : {2, 3}) {
    INFO("stage " << stage);
    Config c;
    c.model.n_head = 1 + int(rng() % 16);
    c.model.n_embd = c.model.n_head * (1 + int(rng() % 128));
    c.train.grad_clip = 0.25 + double(rng() % 100);
    c.train.global_batch_tokens = int64_t(c.train.micro_batch) * c.model.seq_len * 12;
    Config before = c;
    int world = std::vector<int>{1, 2, 3, 4, 6, 12}[rng() % 6];
    std::vector<std::string> warnings = import(hf_config(stage), world, c);

    int64_t hidden = c.model.n_embd;
    REQUIRE(c.zero.stage == stage);
    REQUIRE(c.zero.reduce_bucket_size == hidden * hidden);
    REQUIRE(c.zero.stage3_prefetch_bucket_size == int64_t(0.9 * double(hidden * hidden)));
    REQUIRE(c.zero.stage3_param_persistence_threshold == 10 * hidden);
    REQUIRE(c.zero.allgather_bucket_size == 200000000);
    REQUIRE(c.zero.stage3_max_live_parameters == 1000000000);
    REQUIRE(c.zero.stage3_max_reuse_distance == 1000000000);
    REQUIRE(c.zero.overlap_comm == (stage == 3));  // unset: DeepSpeed's default per stage
    // "auto" batch sizes and clipping keep zerotrain's own values.
    REQUIRE(c.train.micro_batch == before.train.micro_batch);
    REQUIRE(c.train.global_batch_tokens == before.train.global_batch_tokens);
    REQUIRE(c.train.grad_clip == before.train.grad_clip);

    for (const char* ignored :
         {"'optimizer'", "'scheduler'", "'zero_optimization.offload_optimizer'",
          "'zero_optimization.allgather_partitions'", "'zero_optimization.round_robin_gradients'",
          "'steps_per_print'", "'wall_clock_breakdown'"}) {
      INFO(ignored);
      REQUIRE(count_mentions(warnings, ignored) == 1);
    }
    REQUIRE(warnings.size() ==
            7);  // nothing honoured is warned about, fp16 "auto" is off, bf16 "auto" on
  }
}

TEST_CASE("numbers may be strings or scientific notation", "[deepspeed]") {
  auto rng = seeded_rng();
  int64_t mantissa = 1 + int64_t(rng() % 9);
  int exponent = 1 + int(rng() % 10);
  int64_t value = mantissa;
  for (int i = 0; i < exponent; ++i) value *= 10;
  std::string sci = std::to_string(mantissa) + "e" + std::to_string(exponent);
  Config c;
  import(
      R"({"bf16": {"enabled": true}, "gradient_clipping": "0.5", "zero_optimization": {"stage": "1",
      "reduce_bucket_size": ")" +
          sci + R"(", "allgather_bucket_size": )" + sci + R"(,
      "reduce_scatter": false, "use_multi_rank_bucket_allreduce": "false", "contiguous_gradients": false,
      "overlap_comm": true, "prefetch_bucket_size": )" +
          std::to_string(value) + "}}",
      1, c);
  REQUIRE(c.zero.stage == 1);
  REQUIRE(c.zero.reduce_bucket_size == value);
  REQUIRE(c.zero.allgather_bucket_size == value);
  REQUIRE(c.zero.stage3_prefetch_bucket_size == value);
  REQUIRE_FALSE(c.zero.reduce_scatter);
  REQUIRE_FALSE(c.zero.use_multi_rank_bucket_allreduce);
  REQUIRE_FALSE(c.zero.contiguous_gradients);
  REQUIRE(c.zero.overlap_comm);
  REQUIRE(c.zero.overlap_comm_set);
  REQUIRE(c.train.grad_clip == 0.5);
}

TEST_CASE("batch sizes follow DeepSpeed's arithmetic and become tokens", "[deepspeed]") {
  auto rng = seeded_rng();
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
  require_parts(import_error(R"({"train_batch_size": 48, "train_micro_batch_size_per_gpu": 4,
                                 "gradient_accumulation_steps": 8})",
                             2, c),
                {"key 'train_batch_size'", "4*8*2 = 64", "got 48"});
  require_parts(
      import_error(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4})", 2, c),
      {"key 'train_batch_size'", "expected a multiple of", "4*2 = 8", "got 30"});
  require_parts(import_error(R"({"gradient_accumulation_steps": 4})", 1, c),
                {"key 'gradient_accumulation_steps'", "alone does not fix the batch"});
  require_parts(import_error(R"({"train_micro_batch_size_per_gpu": 0})", 1, c),
                {"key 'train_micro_batch_size_per_gpu'", "got 0"});
}

TEST_CASE("bf16 + stage 1 + fp32 gradient accumulation is flagged as DeepSpeed's BF16_Optimizer",
          "[deepspeed]") {
  auto config = [](int stage, const std::string& dtype, const std::string& offload) {
    return R"({"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": ")" + dtype +
           R"("}, "zero_optimization": {"stage": )" + std::to_string(stage) + offload + "}}";
  };
  Config c;
  std::vector<std::string> warnings = import(config(1, "fp32", ""), 1, c);
  REQUIRE(count_mentions(warnings, "BF16_Optimizer") == 1);
  require_parts(warnings[0],
                {"key 'data_types.grad_accum_dtype'", "none of the four stage-1/2 gradient paths"});
  REQUIRE(warnings.size() == 1);

  for (const std::string& other :
       {config(2, "fp32", ""), config(1, "bf16", ""),
        config(1, "float32", R"(, "offload_optimizer": {"device": "cpu"})")}) {
    INFO(other);
    Config d;
    REQUIRE(count_mentions(import(other, 1, d), "BF16_Optimizer") == 0);
  }
  Config e;
  REQUIRE(count_mentions(
              import(R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})", 1, e),
              "BF16_Optimizer") == 0);
}

TEST_CASE("precision other than bf16 is warned about", "[deepspeed]") {
  Config c;
  auto fp16 = import(R"({"fp16": {"enabled": true, "loss_scale": 0}})", 1, c);
  REQUIRE(fp16.size() == 1);
  require_parts(fp16[0], {"key 'fp16.enabled'", "no fp16 mode"});
  auto fp32 = import(R"({"zero_optimization": {"stage": 2}})", 1, c);
  REQUIRE(fp32.size() == 1);
  require_parts(fp32[0], {"bf16.enabled", "fp32"});
  require_parts(import_error(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", 1, c),
                {"fp16 and bf16 are both enabled"});
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
  std::string syntax =
      "{\n  \"zero_optimization\": {\n    \"stage\": 2\n    \"overlap_comm\": true\n  }\n}\n";
  require_parts(import_error(syntax, 1, c), {":4: JSON syntax error", "end of map flow not found"});
  require_parts(import_error("[1, 2]", 1, c), {"expected a JSON object at the top level"});
  require_parts(
      import_error("{\n  \"zero_optimization\": {\n    \"stage\": \"two\"\n  }\n}\n", 1, c),
      {":3: key 'zero_optimization.stage'", "expected an integer, got 'two'"});
  require_parts(import_error(R"({"zero_optimization": {"stage": 5}})", 1, c),
                {"key 'zero_optimization.stage'", "expected an integer in [0, 3], got 5"});
  require_parts(import_error(R"({"zero_optimization": {"reduce_bucket_size": 1.5}})", 1, c),
                {"key 'zero_optimization.reduce_bucket_size'", "expected an integer, got '1.5'"});
  require_parts(import_error(R"({"zero_optimization": {"stage": "auto"}})", 1, c),
                {"key 'zero_optimization.stage'", "\"auto\""});
  require_parts(import_error(R"({"zero_optimization": 2})", 1, c),
                {"key 'zero_optimization'", "expected a JSON object, got '2'"});
  require_parts(import_error(R"({"bf16": {"enabled": "yes please"}})", 1, c),
                {"key 'bf16.enabled'", "got 'yes please'"});
  require_parts(import_error(R"({"zero_optimization": {"overlap_comm": 1}})", 1, c),
                {"key 'zero_optimization.overlap_comm'", "expected a boolean"});
  require_parts(import_error(R"({"data_types": {"grad_accum_dtype": "fp8"}})", 1, c),
                {"key 'data_types.grad_accum_dtype'", "got 'fp8'"});
}

}  // namespace zt
