// train/trainer: when the loop evaluates and checkpoints, step by step, for a
// real in-process run (W = 1). Each case names the mutants of
// tests/mutations.txt it catches.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/shard.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/io/checkpoint.h"
#include "train/loop/trainer.h"

using namespace zt;

// train-eval-every-off-by-one, train-checkpoint-not-at-last: evaluation and
// checkpoints after steps that are multiples of eval_every / checkpoint_every,
// and after the last step whatever it is.
TEST_CASE("trainer: val_loss after every eval_every-th and the last step; so are checkpoints",
          "[trainer]") {
  TestDir dir("zt_expected_trainer");
  std::mt19937_64 rng(test_seed() + 401);
  std::vector<uint32_t> tokens(3000);
  for (uint32_t& t : tokens) t = uint32_t(rng() % 61);
  write_shard(dir.file("train_000.bin"), tokens, false);
  write_shard(dir.file("val_000.bin"), tokens, false);
  const int steps = 5, eval_every = 2, checkpoint_every = 3;
  std::ofstream(dir.file("c.yaml"))
      << "model: {n_layer: 1, n_head: 2, n_embd: 16, vocab_size: 61, seq_len: 8}\n"
      << "data: {train: '" << dir.file("train_*.bin") << "', val: '" << dir.file("val_*.bin")
      << "', tokenizer: byte}\n"
      << "train: {steps: " << steps << ", micro_batch: 2, global_batch_tokens: 32"
      << ", eval_every: " << eval_every << ", eval_batches: 1, sample_every: 0"
      << ", checkpoint_every: " << checkpoint_every << ", keep_checkpoints: 10}\n";
  TrainArgs args;
  args.config_path = dir.file("c.yaml");
  args.run_dir = dir.file("run");
  {
    StdoutTo quiet(dir.file("train.log"));
    REQUIRE(run_train(args) == 0);
  }
  std::ifstream metrics(dir.file("run/metrics.jsonl"));
  std::vector<int> evaluated, logged;
  for (std::string line; std::getline(metrics, line);) {
    const size_t at = line.find("\"step\":");
    if (at == std::string::npos) continue;
    const int step = std::stoi(line.substr(at + 7));
    logged.push_back(step);
    if (line.find("\"val_loss\":") != std::string::npos) evaluated.push_back(step);
  }
  CHECK(logged == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(evaluated == std::vector<int>{2, 4, 5});
  std::vector<std::string> saved;
  for (const std::string& d : complete_checkpoints(dir.file("run")))
    saved.push_back(std::filesystem::path(d).filename().string());
  CHECK(saved == std::vector<std::string>{"step_00000003", "step_00000005"});

  // train-throughput-counts-first-step: tokens/s leaves the first (set-up)
  // step out: 32 tokens x steps 2..5 over their summed times (ms, as logged).
  std::ifstream metrics_again(dir.file("run/metrics.jsonl"));
  double timed_ms = 0;
  for (std::string line; std::getline(metrics_again, line);) {
    const size_t step_at = line.find("\"step\":"), ms_at = line.find("\"ms\":");
    if (step_at == std::string::npos || ms_at == std::string::npos) continue;
    if (std::stoi(line.substr(step_at + 7)) > 1) timed_ms += std::stod(line.substr(ms_at + 5));
  }
  std::ifstream summary_file(dir.file("run/summary.json"));
  std::stringstream summary;
  summary << summary_file.rdbuf();
  const size_t at = summary.str().find("\"tokens_per_second\":");
  REQUIRE(at != std::string::npos);
  const double tokens_per_second = std::stod(summary.str().substr(at + 20));
  REQUIRE(timed_ms > 0);
  CHECK(tokens_per_second == Approx(32.0 * 4 / (timed_ms / 1e3)).epsilon(1e-9));
}
