// The CPU model against an independent float64 PyTorch GPT-2 (tests/reference/torch_reference.py,
// run with Debian's /usr/bin/python3 and its torch). Everything crosses over as files
// in a fresh temporary directory: the weights as an llm.c model file (so the export
// format is checked too), the batch, zerotrain's mean loss, and its gradients as a
// second llm.c file (write_llmc_model only permutes, so it carries gradients as well).
// Weights and tokens are fresh each run; the seed is printed (ZT_TEST_SEED replays it).
// Without torch the tests say so and succeed.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/io/llmc_model_file.h"
#include "train/loop/init_weights.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

// True (after saying why) when this machine cannot run the PyTorch reference.
bool skip_without_torch() {
  static const bool missing = [] {
    if (::access(kPython, X_OK) != 0) {
      std::printf("[torch] skipped: %s not found\n", kPython);
      return true;
    }
    if (std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") != 0) {
      std::printf("[torch] skipped: %s cannot import torch and numpy\n", kPython);
      return true;
    }
    return false;
  }();
  if (missing) SUCCEED("PyTorch reference unavailable on this machine");
  return missing;
}

struct ScriptRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  std::string last_line() const {
    size_t end = output.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    size_t begin = output.rfind('\n', end);
    return output.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
  }
};

// The script lives next to this source file; the tests run from the repository root.
ScriptRun run_reference(const std::string& args) {
  const std::string here = __FILE__;
  const std::string script =
      here.substr(0, here.find_last_of('/') + 1) + "../reference/torch_reference.py";
  REQUIRE(fs::exists(script));
  const std::string cmd = std::string(kPython) + " '" + script + "' " + args + " 2>&1";
  ScriptRun run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char chunk[4096];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) run.output.append(chunk, got);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

// GPT-2 initialisation, then every weight matrix scaled up so that attention
// scores and GELU inputs leave their near-linear range (at std 0.02 a wrong
// softmax or GELU derivative would barely move the gradients), and random
// LayerNorm gains and biases so that their gradients are not trivially those of 1 and 0.
std::vector<float> random_weights(const ParamTable& table, std::mt19937_64& rng) {
  constexpr float kMatrixGain = 8.0f;
  std::vector<float> w(table.total());
  init_gpt2_weights(table, rng(), w.data());
  std::uniform_real_distribution<float> jitter(-0.5f, 0.5f);
  for (const ParamInfo& p : table.params())
    for (size_t j = 0; j < p.numel; j++)
      w[p.offset + j] = p.decay ? w[p.offset + j] * kMatrixGain : w[p.offset + j] + jitter(rng);
  return w;
}

struct Batch {
  int B, T;
  std::vector<int> inputs, targets;
};

Batch random_batch(int B, int T, int vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> token(0, vocab - 1);
  Batch b{B, T, std::vector<int>(B * T), std::vector<int>(B * T)};
  for (int& t : b.inputs) t = token(rng);
  for (int& t : b.targets) t = token(rng);
  return b;
}

void write_batch(const std::string& path, const Batch& b) {
  std::ofstream out(path, std::ios::binary);
  const int32_t shape[2] = {b.B, b.T};
  out.write(reinterpret_cast<const char*>(shape), sizeof shape);
  out.write(reinterpret_cast<const char*>(b.inputs.data()), b.inputs.size() * sizeof(int32_t));
  out.write(reinterpret_cast<const char*>(b.targets.data()), b.targets.size() * sizeof(int32_t));
  REQUIRE(out.good());
}

void write_loss(const std::string& path, double loss) {
  std::ofstream out(path);
  out.precision(17);
  out << loss << "\n";
  REQUIRE(out.good());
}

// zerotrain's mean loss and flat-layout gradients of one micro-batch on the CPU backend.
struct ZtResult {
  double mean_loss = 0;
  std::vector<float> grads;
};

ZtResult run_zerotrain(const ParamTable& table, const std::vector<float>& weights,
                       const Batch& batch, bool with_grads) {
  std::unique_ptr<Ops> ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  hooks.set_params(weights);
  GPT gpt(table, *ops, batch.B, batch.T);
  const int tokens = batch.B * batch.T;
  ZtResult r;
  if (with_grads) {
    r.mean_loss =
        gpt.forward_backward(batch.inputs.data(), batch.targets.data(), 1.0f / tokens, hooks) /
        tokens;
    r.grads = hooks.grads_f32();
  } else {
    r.mean_loss = gpt.forward_loss(batch.inputs.data(), batch.targets.data(), hooks) / tokens;
  }
  return r;
}

// A small model with an odd vocabulary and seq_len > T (unused position rows).
struct GradientCase {
  ParamTable table;
  std::vector<float> weights;
  Batch batch;
  ZtResult zt;
  explicit GradientCase(uint64_t salt)
      : table(gpt_shape(/*n_layer=*/2, /*n_head=*/2, /*n_embd=*/32, /*vocab_size=*/61,
                        /*seq_len=*/21)) {
    std::mt19937_64 rng = test_rng(salt);
    weights = random_weights(table, rng);
    batch = random_batch(/*B=*/3, /*T=*/16, table.config().vocab_size, rng);
    zt = run_zerotrain(table, weights, batch, /*with_grads=*/true);
  }
  void write(const TestDir& dir, double loss, const std::vector<float>& grads) const {
    write_llmc_model(dir.file("model.bin"), table, weights);
    write_batch(dir.file("batch.bin"), batch);
    write_loss(dir.file("zt_loss.txt"), loss);
    write_llmc_model(dir.file("zt_grads.bin"), table, grads);
  }
};

TEST_CASE("CPU model loss and gradients match an independent float64 PyTorch GPT-2", "[torch]") {
  if (skip_without_torch()) return;
  GradientCase c(1);
  TestDir dir("zt_torch_ref");
  c.write(dir, c.zt.mean_loss, c.zt.grads);
  const ScriptRun run = run_reference(dir.path);
  INFO(run.output);
  const size_t loss_line = run.output.find("loss: zerotrain");
  if (loss_line != std::string::npos)
    std::printf("[torch] %s\n",
                run.output.substr(loss_line, run.output.find('\n', loss_line) - loss_line).c_str());
  std::printf("[torch] %s\n", run.last_line().c_str());
  REQUIRE(run.exit_code == 0);
  REQUIRE(run.last_line().rfind("torch_reference: PASS", 0) == 0);
}

TEST_CASE("weights exported as an llm.c file give zerotrain's loss in PyTorch", "[torch]") {
  if (skip_without_torch()) return;
  const ParamTable table(gpt_shape(/*n_layer=*/3, /*n_head=*/4, /*n_embd=*/48,
                                   /*vocab_size=*/97, /*seq_len=*/20));
  std::mt19937_64 rng = test_rng(2);
  const std::vector<float> weights = random_weights(table, rng);
  const Batch batch = random_batch(/*B=*/2, /*T=*/20, table.config().vocab_size, rng);
  const double zt_loss = run_zerotrain(table, weights, batch, /*with_grads=*/false).mean_loss;

  TestDir dir("zt_torch_ref");
  write_llmc_model(dir.file("model.bin"), table, weights);
  write_batch(dir.file("batch.bin"), batch);
  const ScriptRun run = run_reference("--eval " + dir.path);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string line = run.last_line();
  REQUIRE(line.rfind("loss ", 0) == 0);
  const double torch_loss = std::stod(line.substr(5));
  std::printf("[torch] eval loss: zerotrain %.9g torch %.9g\n", zt_loss, torch_loss);
  CHECK(std::abs(zt_loss - torch_loss) / std::abs(torch_loss) < 2e-7);  // LOSS_TOL
}

// The comparison must be able to fail: an error in one random tensor's gradient of
// 0.1% or of 10x the gradient tolerance (4e-5), or in the loss of 0.01% or of 10x the
// loss tolerance (2e-6), has to be caught (and the tensor named).
TEST_CASE("the PyTorch comparison rejects a slightly wrong gradient or loss", "[torch]") {
  if (skip_without_torch()) return;
  GradientCase c(3);
  TestDir dir("zt_torch_ref");
  std::string expected_culprit;
  for (const double grad_error : {1e-3, 4e-5}) {
    SECTION("one tensor's gradient scaled by 1 + " + std::to_string(grad_error)) {
      std::mt19937_64 rng = test_rng(4);
      const auto& params = c.table.params();
      const ParamInfo& p = params[std::uniform_int_distribution<size_t>(0, params.size() - 1)(rng)];
      std::vector<float> grads = c.zt.grads;
      for (size_t j = 0; j < p.numel; j++)
        grads[p.offset + j] = static_cast<float>(grads[p.offset + j] * (1.0 + grad_error));
      c.write(dir, c.zt.mean_loss, grads);
      expected_culprit = "on " + p.name + ";";
    }
  }
  for (const double loss_error : {1e-4, 2e-6}) {
    SECTION("the loss scaled by 1 + " + std::to_string(loss_error)) {
      c.write(dir, c.zt.mean_loss * (1.0 + loss_error), c.zt.grads);
      expected_culprit = "on loss;";
    }
  }
  const ScriptRun run = run_reference(dir.path);
  INFO(run.output);
  REQUIRE(run.exit_code == 1);
  REQUIRE(run.last_line().rfind("torch_reference: FAIL", 0) == 0);
  REQUIRE(run.last_line().find(expected_culprit) != std::string::npos);
}

}  // namespace
}  // namespace zt
