// Config loading, overrides, validation messages, the effective-config printer
// and the presets in configs/. Bad configs are written to temporary files; each
// error must be one line naming the file, line, key, what was expected and what
// was found.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/config/config_schema.h"

namespace zt {
namespace {

// A YAML file in its own temporary directory, removed when the test ends.
using TempYaml = TestFile;

// 1-based line of the first line of `text` containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(needle) != std::string::npos) return n;
  }
  FAIL("'" << needle << "' not in the test YAML");
  return 0;
}

// Loads and returns the ConfigError message; fails the test if none is thrown.
std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    load_config(path, overrides);
  } catch (const ConfigError& e) {
    std::string message = e.what();
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    return message;
  }
  FAIL("no ConfigError for " << path);
  return "";
}

// Every key of `a` equals the same key of `b`, bit for bit for doubles.
void require_same_config(Config a, Config b) {
  for (const ConfigKey& key : config_keys()) {
    INFO("key " << key.path());
    FieldRef fb = key.field(b);
    std::visit([&](auto* pa) { REQUIRE(*pa == *std::get<decltype(pa)>(fb)); }, key.field(a));
  }
  REQUIRE(a.zero.overlap_comm_set == b.zero.overlap_comm_set);
}

std::mt19937_64 seeded_rng() {
  uint64_t seed = std::random_device{}();
  UNSCOPED_INFO("rng seed " << seed);
  return std::mt19937_64(seed);
}

}  // namespace

TEST_CASE("missing keys keep the struct defaults", "[config]") {
  TempYaml bare("model:\n");
  require_same_config(load_config(bare.path, {}), Config{});

  TempYaml partial("model:\n  n_layer: 7\nzero:\n");
  Config expected;
  expected.model.n_layer = 7;
  Config loaded = load_config(partial.path, {});
  require_same_config(loaded, expected);
  REQUIRE(loaded.source == partial.path);
}

TEST_CASE("overrides apply after the file, later ones win", "[config]") {
  auto rng = seeded_rng();
  int file_steps = 1 + int(rng() % 1000), first = 1 + int(rng() % 1000),
      last = 1 + int(rng() % 1000);
  TempYaml file("train:\n  steps: " + std::to_string(file_steps) + "\n  lr: 0.5\n");
  Config c =
      load_config(file.path, {"train.steps=" + std::to_string(first), "train.lr=2e-3",
                              "train.steps=" + std::to_string(last), "data.train='a b.bin'"});
  REQUIRE(c.train.steps == last);
  REQUIRE(c.train.lr == 2e-3);
  REQUIRE(c.data.train == "a b.bin");
  REQUIRE(load_config(file.path, {}).train.steps == file_steps);
  REQUIRE(load_config(file.path, {"system.fault_inject=1:3:exit", "system.fault_inject="})
              .system.fault_inject.empty());
}

TEST_CASE("integer keys accept integral scientific notation", "[config]") {
  auto rng = seeded_rng();
  int64_t mantissa = 1 + int64_t(rng() % 9);
  int exponent = 1 + int(rng() % 12);
  int64_t expected = mantissa;
  for (int i = 0; i < exponent; ++i) expected *= 10;
  std::string sci = std::to_string(mantissa) + "e" + std::to_string(exponent);
  TempYaml file("zero:\n  reduce_bucket_size: " + sci + "\n  allgather_bucket_size: 2.5E7\n" +
                "  stage3_prefetch_bucket_size: \"" + sci + "\"\n");
  Config c = load_config(file.path, {"zero.stage3_max_live_parameters=" + sci});
  REQUIRE(c.zero.reduce_bucket_size == expected);
  REQUIRE(c.zero.allgather_bucket_size == 25000000);
  REQUIRE(c.zero.stage3_prefetch_bucket_size == expected);
  REQUIRE(c.zero.stage3_max_live_parameters == expected);
}

TEST_CASE("overlap_comm defaults to true for stage 3 only, unless set", "[config]") {
  TempYaml stage_only("zero:\n  stage: 3\n");
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage);
    Config c = load_config(stage_only.path, {"zero.stage=" + std::to_string(stage)});
    REQUIRE(c.zero.overlap_comm == (stage == 3));
    REQUIRE_FALSE(c.zero.overlap_comm_set);
  }
  TempYaml explicit_off("zero:\n  stage: 3\n  overlap_comm: false\n");
  Config off = load_config(explicit_off.path, {});
  REQUIRE_FALSE(off.zero.overlap_comm);
  REQUIRE(off.zero.overlap_comm_set);
  Config on = load_config(explicit_off.path, {"zero.stage=1", "zero.overlap_comm=true"});
  REQUIRE(on.zero.overlap_comm);
  REQUIRE(on.zero.overlap_comm_set);
}

TEST_CASE("config_to_yaml reloads to an identical config", "[config]") {
  auto rng = seeded_rng();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto pick = [&](int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); };
  auto random_text = [&]() {
    std::string s;
    for (int n = pick(0, 24); n > 0; --n) s += char(pick(32, 126));
    if (pick(0, 3) == 0) s += "\t#\\\"";
    return s;
  };
  for (int trial = 0; trial < 20; ++trial) {
    Config c;
    c.model.n_layer = pick(1, 96);
    c.model.n_head = pick(1, 32);
    c.model.n_embd = c.model.n_head * pick(1, 128);
    c.model.vocab_size = pick(2, 1 << 30);
    c.model.seq_len = pick(1, 4096);
    c.data.train = random_text();
    c.data.val = random_text();
    c.data.tokenizer = random_text();
    c.train.steps = pick(1, 1 << 30);
    c.train.micro_batch = pick(1, 64);
    c.train.global_batch_tokens = int64_t(c.train.micro_batch) * c.model.seq_len * pick(1, 64);
    c.train.lr = unit(rng) * 1e-2 + 1e-300;
    c.train.min_lr = c.train.lr * unit(rng);
    c.train.warmup_steps = pick(0, 5000);
    c.train.weight_decay = unit(rng);
    c.train.grad_clip = unit(rng) * 10;
    c.train.beta1 = unit(rng);
    c.train.beta2 = unit(rng);
    c.train.eps = unit(rng) * 1e-6 + 1e-300;
    c.train.temperature = unit(rng) * 2 + 1e-3;
    c.train.top_k = pick(0, 1000);
    c.train.seed = rng();
    c.zero.stage = pick(0, 3);
    c.zero.reduce_bucket_size = int64_t(rng() >> 2) + 1;
    c.zero.stage3_param_persistence_threshold = int64_t(rng() >> 3);
    c.zero.reduce_scatter = pick(0, 1);
    c.zero.overlap_comm = pick(0, 1);
    c.zero.overlap_comm_set = true;
    c.zero.native_reduce_scatter = pick(0, 1);
    c.system.device = std::vector<std::string>{"auto", "cpu", "cuda"}[pick(0, 2)];
    c.system.deterministic = pick(0, 1);
    c.system.fault_inject =
        pick(0, 1) ? std::to_string(pick(0, 7)) + ":" + std::to_string(pick(0, 99)) + ":throw" : "";
    std::string text = config_to_yaml(c);
    INFO(text);
    TempYaml saved(text);
    require_same_config(load_config(saved.path, {}), c);
  }
}

TEST_CASE("the effective config lists every key and marks a defaulted overlap_comm", "[config]") {
  TempYaml file("zero:\n  stage: 3\n");
  std::string text = config_to_yaml(load_config(file.path, {}));
  for (const ConfigKey& key : config_keys()) {
    INFO(key.path());
    REQUIRE(text.find(std::string("\n  ") + key.name + ": ") != std::string::npos);
  }
  REQUIRE(text.find("overlap_comm: true  # not set") != std::string::npos);
}

TEST_CASE("every preset in configs/ loads and validates", "[config]") {
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs")) {
    if (entry.path().extension() != ".yaml") continue;
    std::string path = entry.path().string();
    INFO(path);
    Config c = load_config(path, {});
    validate_for_world(c, 1);
    ++presets;
  }
  REQUIRE(presets >= 5);

  Config tiny = load_config("configs/tiny.yaml", {});
  REQUIRE(tiny.model.vocab_size == 1024);
  REQUIRE(tiny.data.tokenizer == "build/data/kjv-bpe/tokenizer.model");
  REQUIRE(tiny.system.device == "cpu");
  for (int world = 1; world <= 4; ++world) REQUIRE(grad_accum_steps(tiny, world) * world == 12);

  struct Shape {
    const char* file;
    int n_layer, n_head, n_embd;
  };
  for (Shape s :
       {Shape{"configs/gpt2-124m.yaml", 12, 12, 768}, Shape{"configs/gpt2-350m.yaml", 24, 16, 1024},
        Shape{"configs/gpt2-774m.yaml", 36, 20, 1280},
        Shape{"configs/gpt2-1.5b.yaml", 48, 25, 1600}}) {
    INFO(s.file);
    Config c = load_config(s.file, {});
    REQUIRE(c.model.n_layer == s.n_layer);
    REQUIRE(c.model.n_head == s.n_head);
    REQUIRE(c.model.n_embd == s.n_embd);
    REQUIRE(c.model.vocab_size == 50304);
    REQUIRE(c.train.global_batch_tokens == 524288);
    REQUIRE(c.system.device == "auto");
    REQUIRE(c.data.tokenizer == "gpt2");
    REQUIRE(c.data.train_fallback == "build/data/kjv-gpt2/train_*.bin");
    REQUIRE(c.train.sample_every > 0);
    for (int world : {1, 2, 4, 8}) validate_for_world(c, world);
  }
}

TEST_CASE("bad config files give one-line errors with file, line, key and expectation",
          "[config]") {
  struct Case {
    std::string yaml;
    std::string line_needle;  // the text on the line the error must point at
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {"model:\n  n_layer: 2\nzero:\n  stagee: 2\n",
       "stagee",
       {"key 'zero.stagee'", "unknown key", "did you mean 'stage'?"}},
      {"train:\n  lr: abc\n", "lr:", {"key 'train.lr'", "expected a finite number, got 'abc'"}},
      {"train:\n  steps: 10\n  deterministic: true\n",
       "deterministic",
       {"key 'train.deterministic'", "did you mean 'system.deterministic'?"}},
      {"system:\n  deterministic: maybe\n", "maybe", {"expected a boolean", "got 'maybe'"}},
      {"train:\n  steps: 0\n", "steps", {"key 'train.steps'", "expected an integer >= 1, got 0"}},
      {"train:\n  beta2: 1.0\n",
       "beta2",
       {"key 'train.beta2'", "expected a number in [0, 1), got 1"}},
      {"model:\n  vocab_size: 1\n",
       "vocab_size",
       {"expected an integer in [2, 2147483648), got 1"}},
      {"zero:\n  stage: 4\n",
       "stage",
       {"key 'zero.stage'", "expected an integer in [0, 3], got 4"}},
      {"model:\n  n_layer: 4\n  n_head: a: b\ntrain:\n  steps: 3\n",
       "n_head",
       {"YAML syntax error", "a ':' where no key can start"}},
      {"model:\n  n_layer: 1.5\n",
       "n_layer",
       {"key 'model.n_layer'", "expected an integer, got '1.5'"}},
      {"modle:\n  n_layer: 2\n",
       "modle",
       {"section 'modle'", "unknown section", "did you mean 'model'?"}},
      {"stage: 2\n", "stage", {"unknown section", "did you mean 'zero.stage'?"}},
      {"model:\n  n_head: 12\n  n_embd: 100\n",
       "n_embd",
       {"key 'model.n_embd'", "multiple of model.n_head", "n_embd 100", "n_head 12"}},
      {"train:\n  micro_batch: 4\n  global_batch_tokens: 6000\n",
       "global_batch_tokens",
       {"key 'train.global_batch_tokens'", "multiple of micro_batch*seq_len = 4*128 = 512",
        "got 6000", "5632 or 6144"}},
      {"system:\n  device: gpu\n",
       "device",
       {"key 'system.device'", "expected one of auto, cpu, cuda, got 'gpu'"}},
      {"system:\n  communicator: gloo\n",
       "communicator",
       {"key 'system.communicator'", "expected one of auto, mpi, nccl, got 'gloo'"}},
      {"system:\n  fault_inject: 1:x:exit\n",
       "fault_inject",
       {"key 'system.fault_inject'", "RANK:STEP:exit|throw", "got '1:x:exit'"}},
      {"system:\n  fault_inject: 1:5:abort\n", "fault_inject", {"got '1:5:abort'"}},
      {"system:\n  heartbeat_ms: 200\n  failure_timeout_s: 0.3\n",
       "failure_timeout_s",
       {"key 'system.failure_timeout_s'", "at least two heartbeats",
        "2 x system.heartbeat_ms = 0.4 s", "got 0.3"}},
      {"system:\n  heartbeat_ms: 0\n", "heartbeat_ms", {"key 'system.heartbeat_ms'", "got 0"}},
      {"train:\n  lr: 1e-3\n  min_lr: 1e-2\n",
       "min_lr",
       {"expected train.min_lr <= train.lr", "min_lr 0.01 > lr 0.001"}},
      {"train:\n  lr: 1e-3\n  lr: 2e-3\n",
       "2e-3",
       {"key 'train.lr'", "duplicate key (first at line 2)"}},
      {"zero: 3\n", "zero", {"section 'zero'", "expected a map of keys, got '3'"}},
      {"- model\n- train\n", "model", {"expected a map of sections", "got a sequence"}},
      {"data:\n  train: [a, b]\n",
       "train",
       {"key 'data.train'", "expected a string, got a sequence"}},
      {"zero:\n  reduce_bucket_size: 5.5e0\n",
       "reduce_bucket_size",
       {"expected an integer, got '5.5e0'"}},
      {"zero:\n  stage: 2\n  allgather_bucket_size: 50001\n",
       "allgather_bucket_size",
       {"key 'zero.allgather_bucket_size'", "expected an even zero.allgather_bucket_size",
        "got 50001"}},
      {"zero:\n  allgather_bucket_size: 7\n  stage: 1\n",
       "stage: 1",
       {"key 'zero.stage'", "expected an even zero.allgather_bucket_size", "got 7"}},
      {"zero:\n  zzzzzz: 1\n",
       "zzzzzz",
       {"unknown key, expected one of stage, reduce_bucket_size"}},
  };
  for (const Case& bad : cases) {
    INFO("yaml:\n" << bad.yaml);
    TempYaml file(bad.yaml);
    std::string message = load_error(file.path);
    std::string where = file.path + ":" + std::to_string(line_of(bad.yaml, bad.line_needle)) + ": ";
    require_parts(message, {where});
    REQUIRE(message.rfind(where, 0) == 0);
    require_parts(message, bad.parts);
  }
}

TEST_CASE("the line number follows the offending key wherever it is", "[config]") {
  auto rng = seeded_rng();
  std::vector<std::string> good = {"  steps: 5\n",
                                   "  lr: 0.01\n",
                                   "  eval_every: 3\n",
                                   "  top_k: 7\n",
                                   "  seed: 99\n",
                                   "  # a comment\n",
                                   "\n"};
  std::shuffle(good.begin(), good.end(), rng);
  size_t insert_at = rng() % (good.size() + 1);
  good.insert(good.begin() + long(insert_at), "  warmup_stepz: 3\n");
  std::string yaml = "train:\n";
  for (const std::string& line : good) yaml += line;
  TempYaml file(yaml);
  std::string message = load_error(file.path);
  require_parts(message,
                {file.path + ":" + std::to_string(line_of(yaml, "warmup_stepz")) +
                 ": key 'train.warmup_stepz': unknown key (did you mean 'warmup_steps'?)"});
}

TEST_CASE("file-level errors name the file", "[config]") {
  std::string missing = "/nonexistent/zt_no_such_config.yaml";
  require_parts(load_error(missing), {missing + ": cannot open config file", "No such file"});
  TempYaml scalar("just text\n");
  require_parts(load_error(scalar.path),
                {scalar.path + ":1: expected a map of sections", "got 'just text'"});
}

TEST_CASE("config files: only regular files, at most 1 MiB, not empty", "[config]") {
  TestDir dir("zt_test_config");
  HangGuard guard(120);  // a FIFO read that blocks fails the run instead of hanging it
  REQUIRE(::mkfifo(dir.file("fifo.yaml").c_str(), 0644) == 0);
  require_parts(load_error(dir.file("fifo.yaml")),
                {dir.file("fifo.yaml") + ": cannot read config file: it is a named pipe (FIFO)"});
  require_parts(load_error("/dev/zero"), {"/dev/zero: cannot read config file: it is a character"});
  require_parts(load_error(dir.path), {dir.path + ": cannot read config file: it is a directory"});
  std::ofstream(dir.file("huge.yaml")) << "# " << std::string(kConfigMaxBytes, 'x') << "\n";
  require_parts(load_error(dir.file("huge.yaml")),
                {dir.file("huge.yaml") + ": config file is", "more than the limit of 1048576"});

  // A file that sets nothing is refused by name, even when --set would fill it.
  for (const std::string text : {"", "# only a comment\n", "{}\n", "---\n"}) {
    INFO("'" << text << "'");
    TempYaml empty(text);
    std::string error;
    try {
      load_config(empty.path, {"train.steps=3"});
    } catch (const ConfigError& e) {
      error = e.what();
    }
    CHECK(error ==
          empty.path + " is empty (no key set); write at least one, e.g. 'train: {steps: 200}'");
  }
  TempYaml section_only("model:\n");
  require_same_config(load_config(section_only.path, {}), Config{});
}

TEST_CASE("a YAML syntax error quoting a control character stays one line", "[config]") {
  // Found by fuzz/targets/config_file: yaml-cpp's message quoted a newline raw.
  TempYaml file(std::string("\0\r\0\0\0\n\nN", 8));
  require_parts(load_error(file.path), {file.path + ":", "YAML syntax error", "\\x0a"});
  // And a multi-line scalar quoted in a message (fuzz/targets/config_file).
  TempYaml scalar("train:\n  lr: \"a\\nb\"\n");
  require_parts(load_error(scalar.path), {"key 'train.lr'", "got 'a\\x0ab'"});
}

TEST_CASE("bad overrides give one-line errors naming the --set text", "[config]") {
  TempYaml file("train:\n  steps: 10\n");
  struct Case {
    std::string set;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {"train.steps", {"--set train.steps: expected SECTION.KEY=VALUE, found no '='"}},
      {"steps=3", {"--set steps=3: expected SECTION.KEY=VALUE, found no '.' in 'steps'"}},
      {"train.stepz=3",
       {"--set train.stepz=3: unknown key 'train.stepz'", "did you mean 'steps'?"}},
      {"trian.steps=3", {"--set trian.steps=3: unknown section 'trian'", "did you mean 'train'?"}},
      {"model.lr=3", {"unknown key 'model.lr'", "did you mean 'train.lr'?"}},
      {"train.lr=abc", {"--set train.lr=abc: expected a finite number, got 'abc'"}},
      {"train.micro_batch=2.5", {"--set train.micro_batch=2.5: expected an integer, got '2.5'"}},
      {"train.micro_batch=0", {"--set train.micro_batch=0: expected an integer >= 1, got 0"}},
      {"train.micro_batch=5",
       {"--set train.micro_batch=5: expected train.global_batch_tokens to be a multiple"}},
      {"system.device=tpu",
       {"--set system.device=tpu: expected one of auto, cpu, cuda, got 'tpu'"}},
      {"data.train=*.bin",
       {"--set data.train=*.bin: cannot read '*.bin' as a YAML scalar", "quote the value"}},
      {"zero.overlap_comm=",
       {"--set zero.overlap_comm=: expected a boolean (true or false), got nothing"}},
  };
  for (const Case& bad : cases) {
    INFO("--set " << bad.set);
    require_parts(load_error(file.path, {bad.set}), bad.parts);
  }
}

TEST_CASE("validate_for_world needs the global batch to divide over the ranks", "[config]") {
  auto rng = seeded_rng();
  TempYaml file("train:\n  micro_batch: 2\n  global_batch_tokens: 768\nmodel:\n  seq_len: 64\n");
  Config c = load_config(file.path, {});  // 768 tokens = 6 micro-batches of 2 x 64
  for (int world = 1; world <= 8; ++world) {
    INFO("world " << world);
    if (6 % world == 0) {
      validate_for_world(c, world);
      REQUIRE(grad_accum_steps(c, world) == 6 / world);
    } else {
      std::string message;
      try {
        grad_accum_steps(c, world);
      } catch (const ConfigError& e) {
        message = e.what();
      }
      std::string multiple = std::to_string(128 * world);
      require_parts(message,
                    {"train.global_batch_tokens", "got 768", "world size " + std::to_string(world),
                     "2*64*" + std::to_string(world) + " = " + multiple});
    }
  }
  int bad_world = 4 + int(rng() % 2);  // 4 or 5: neither divides 6
  REQUIRE_THROWS_AS(validate_for_world(c, bad_world), ConfigError);
}

}  // namespace zt
