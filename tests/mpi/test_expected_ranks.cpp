// Cross-rank loss arithmetic, at whatever W mpirun gives (tests/run_all.sh runs
// [mpi] at W = 1..4): the real trainer (run_train, in this process, on every
// rank) and the real `zerotrain eval` (run_eval_command) report losses that
// equal one rank's recomputation on the same weights.
//  - The training loss of each step is sum_over_ranks(loss) / global tokens;
//    its reference is one rank running every micro-batch of the step (the
//    loader's W = 1 indexing with 12 micro-steps reads the same sequences).
//  - The validation loss is sum_over_ranks(sum) / (batches * B * T * W): W
//    ranks read eval_batches batches each, in file order, i.e. the first
//    eval_batches * W batches; its reference is one rank evaluating those.
//  - `zerotrain eval --batches n` takes batch j on rank j mod W and sums over
//    the ranks; with n = eval_batches * W it must equal the trainer's
//    validation loss, printed once, by rank 0.
// The weights are the trainer's own: GPT-2 initialisation for step 1 and the
// validation before training, then each step's checkpoint. A sum over ranks
// that is not divided by W (W times the loss), or a loss not summed over
// ranks (1/W of it), fails at every W > 1. Tolerance: each micro-batch's loss
// is the same computation on the same weights on any rank; only the order of
// the double-precision sums differs, so 1e-9 relative is ample (eval prints 6
// decimals, so its line is compared to 1e-6).
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/shard.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/cli/commands.h"
#include "train/io/checkpoint.h"
#include "train/loop/init_weights.h"
#include "train/loop/trainer.h"

namespace zt {
namespace {

constexpr int kB = 2, kT = 8, kMicro = 12, kEvalBatches = 3, kSteps = 2;
constexpr uint64_t kSeed = 4242;

GPTConfig shape() { return gpt_shape(2, 2, 16, 53, kT); }

// One directory every rank sees: rank 0 makes it, the others get its name.
struct SharedDir {
  std::unique_ptr<TestDir> owned;
  std::string path;
  SharedDir() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[4096] = {0};
    if (rank == 0) {
      owned.reset(new TestDir("zt_test_ranks"));
      std::snprintf(name, sizeof name, "%s", owned->path.c_str());
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    path = name;
  }
  ~SharedDir() { MPI_Barrier(MPI_COMM_WORLD); }  // nobody reads while rank 0 removes it
  std::string file(const std::string& n) const { return path + "/" + n; }
};

// The number after "key": in a JSON line (the writers use %.17g).
double json_number(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  REQUIRE(at != std::string::npos);
  return std::strtod(line.c_str() + at + k.size(), nullptr);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Mean per-token loss of one rank's model with weights `w` over `n` micro-batches
// of `loader` (step `step`, micro-steps 0..n-1; or, with `by_step`, steps 0..n-1
// at micro-step 0, which is how evaluation walks the validation set).
double one_rank_mean(const std::vector<float>& w, DataLoader& loader, int step, int n,
                     bool by_step) {
  const ParamTable table(shape());
  std::unique_ptr<Ops> ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  hooks.set_params(w);
  GPT model(table, *ops, kB, kT);
  std::vector<int> in(kB * kT), tgt(kB * kT);
  double sum = 0;
  for (int j = 0; j < n; j++) {
    if (by_step) loader.micro_batch(j, 0, in.data(), tgt.data());
    else loader.micro_batch(step, j, in.data(), tgt.data());
    sum += model.forward_loss(in.data(), tgt.data(), hooks);
  }
  return sum / (static_cast<double>(n) * kB * kT);
}

bool near(double got, double want, double rel) {
  return std::fabs(got - want) <= rel * std::fabs(want);
}

}  // namespace

TEST_CASE("train and validation losses at W ranks equal one rank's on the same weights", "[mpi]") {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  SharedDir dir;
  const ParamTable table(shape());
  if (rank == 0) {
    std::mt19937_64 rng(kSeed);
    for (const char* name : {"train_000.bin", "val_000.bin"}) {
      std::vector<uint32_t> tokens(3000);
      for (uint32_t& t : tokens) t = static_cast<uint32_t>(rng() % shape().vocab_size);
      write_shard(dir.file(name), tokens, false);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  for (int stage : {0, 3}) {
    INFO("W = " << world << ", stage " << stage);
    const std::string run = dir.file("run" + std::to_string(stage));
    const std::string config = dir.file("c" + std::to_string(stage) + ".yaml");
    if (rank == 0)
      std::ofstream(config) << "model: {n_layer: 2, n_head: 2, n_embd: 16, vocab_size: 53"
                            << ", seq_len: " << kT << "}\n"
                            << "data: {train: '" << dir.file("train_*.bin") << "', val: '"
                            << dir.file("val_*.bin") << "', tokenizer: byte}\n"
                            << "train: {steps: " << kSteps << ", micro_batch: " << kB
                            << ", global_batch_tokens: " << kB * kT * kMicro
                            << ", lr: 1e-2, min_lr: 1e-3, warmup_steps: 0, grad_clip: 1"
                            << ", eval_every: 1, eval_batches: " << kEvalBatches
                            << ", sample_every: 0, checkpoint_every: 1, keep_checkpoints: 5"
                            << ", seed: " << kSeed << "}\n"
                            << "zero: {stage: " << stage << "}\n";
    MPI_Barrier(MPI_COMM_WORLD);
    TrainArgs args;
    args.config_path = config;
    args.run_dir = run;
    {
      StdoutTo quiet(dir.file("train" + std::to_string(rank) + ".log"));
      REQUIRE(run_train(args) == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);  // rank 0's metrics and summary are complete

    const std::vector<std::string> metrics = lines_of(run + "/metrics.jsonl");
    REQUIRE(metrics.size() == static_cast<size_t>(kSteps));
    const std::vector<std::string> summary = lines_of(run + "/summary.json");
    std::string summary_text;
    for (const std::string& l : summary) summary_text += l;

    // The weights each loss was computed on.
    std::vector<std::vector<float>> weights(kSteps + 1);
    weights[0].resize(table.total());
    init_gpt2_weights(table, kSeed, weights[0].data());
    for (int s = 1; s <= kSteps; s++) {
      char name[64];
      std::snprintf(name, sizeof name, "/checkpoints/step_%08d", s);
      weights[s] = read_checkpoint_weights(run + name, read_checkpoint_meta(run + name));
    }

    DataLoader train(dir.file("train_*.bin"), shape().vocab_size, kB, kT, 0, 1, kMicro, kSeed,
                     true);
    DataLoader val(dir.file("val_*.bin"), shape().vocab_size, kB, kT, 0, 1, 1, kSeed, false);
    const int val_batches = kEvalBatches * world;
    for (int s = 1; s <= kSteps; s++) {
      INFO("step " << s);
      // Step s trains on the weights after step s - 1; its validation follows the update.
      const double want_loss = one_rank_mean(weights[s - 1], train, s - 1, kMicro, false);
      const double want_val = one_rank_mean(weights[s], val, 0, val_batches, true);
      const double got_loss = json_number(metrics[s - 1], "loss");
      const double got_val = json_number(metrics[s - 1], "val_loss");
      INFO("train loss " << got_loss << " vs one rank's " << want_loss << "; val " << got_val
                         << " vs " << want_val);
      CHECK(near(got_loss, want_loss, 1e-9));
      CHECK(near(got_val, want_val, 1e-9));
    }
    const double want_initial = one_rank_mean(weights[0], val, 0, val_batches, true);
    const double got_initial = json_number(summary_text, "initial_val_loss");
    const double got_final = json_number(summary_text, "final_val_loss");
    INFO("initial val " << got_initial << " vs " << want_initial);
    CHECK(near(got_initial, want_initial, 1e-9));
    CHECK(got_final == json_number(metrics.back(), "val_loss"));

    // `zerotrain eval` on the last checkpoint over the same eval_batches * W batches.
    char ckpt[64];
    std::snprintf(ckpt, sizeof ckpt, "/checkpoints/step_%08d", kSteps);
    const std::string eval_log = dir.file("eval" + std::to_string(rank) + ".log");
    {
      StdoutTo quiet(eval_log);
      REQUIRE(run_eval_command({config, "--checkpoint", run + ckpt, "--batches",
                                std::to_string(val_batches)}) == 0);
    }
    std::ifstream f(eval_log);
    std::stringstream text;
    text << f.rdbuf();
    const size_t at = text.str().find("mean loss ");
    if (rank != 0) {
      CHECK(at == std::string::npos);  // one line per job
    } else {
      REQUIRE(at != std::string::npos);
      const double printed = std::strtod(text.str().c_str() + at + 10, nullptr);
      const double want_final = one_rank_mean(weights[kSteps], val, 0, val_batches, true);
      INFO("eval printed " << printed << " vs " << want_final);
      CHECK(std::fabs(printed - want_final) <= 1e-6);  // printed with %.6f
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

}  // namespace zt
