// `zerotrain grid-projection`: the grid step-time model's projection of a
// GPT-shaped model onto a real cluster (a network preset): for every ZeRO
// stage, tensor size T and pipeline size P in {1, 2, 4, 8} that divide the
// world, the predicted step and its parts, the memory per GPU and whether it
// fits, and whether DeepSpeed's pipeline engine would refuse the stage; the
// fastest configuration that fits is the winner. Every number is model
// output (zero/analysis/grid_step_time.h), and the header says so.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/config/config.h"
#include "train/config/grid_cluster_file.h"
#include "zero/analysis/grid_step_time.h"

namespace zt {
namespace {

// The named models: GPT-2's architecture at three published shapes.
struct NamedModel {
  const char* name;
  GPTConfig shape;
  int micro_batch;
  int64_t global_batch_tokens;
  const char* source;
};

const std::vector<NamedModel>& named_models() {
  static const std::vector<NamedModel> kModels = {
      {"1.5b",
       {48, 25, 1600, 50304, 1024},
       4,
       524288,
       "GPT-2 XL (configs/gpt2-1.5b.yaml); batch as llm.c's 1.5B run, 524288 tokens"},
      {"7b",
       {32, 32, 4096, 50304, 2048},
       1,
       4194304,
       "GPT-2 architecture at Llama-2-7B's depth and width (configs/pmbs/gpt_7b.yaml); "
       "batch as Llama 2's, 4M tokens"},
      {"20b",
       {44, 64, 6144, 50304, 2048},
       1,
       4194304,
       "GPT-2 architecture at GPT-NeoX-20B's depth, width and heads (configs/pmbs/gpt_20b.yaml); "
       "batch 4M tokens (GPT-NeoX-20B's was about 3.15M)"},
  };
  return kModels;
}

struct ModelChoice {
  GPTConfig shape;
  int micro_batch = 1;
  int64_t global_batch_tokens = 0;
  std::string label;
  bool named = false;  // a shape of named_models(): --seq sets its sequence
};

ModelChoice choose_model(const CliArgs& f) {
  const std::string name = f.get("--model");
  for (const NamedModel& m : named_models())
    if (name == m.name) return {m.shape, m.micro_batch, m.global_batch_tokens, m.source, true};
  const bool yaml = name.size() > 5 && (name.substr(name.size() - 5) == ".yaml" ||
                                        name.substr(name.size() - 4) == ".yml");
  if (!yaml) f.fail("--model: expected 1.5b, 7b, 20b or a CONFIG.yaml, got '" + name + "'");
  const Config c = load_config(name, {});
  return {c.model, c.train.micro_batch, c.train.global_batch_tokens, "the model of " + name, false};
}

std::string grouped(double x) {
  std::string digits = std::to_string(static_cast<long long>(x + 0.5));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

struct Row {
  int stage, tp, pp, dp, m;
  GridStepPrediction p;
};

void print_row(const Row& r, const std::string& rank) {
  const double ms = 1e3;
  std::printf("%4s %5d %2d %2d %4d %5d %9.1f %10s %8.1f %7.1f %7.1f %8.1f %8.1f %9.1f  %-4s %s\n",
              rank.c_str(), r.stage, r.tp, r.pp, r.dp, r.m, r.p.step_s * ms,
              grouped(r.p.tokens_per_s).c_str(), r.p.compute_s * ms, r.p.bubble_s * ms,
              r.p.tensor_s * ms, r.p.pipeline_s * ms, r.p.data_exposed_s * ms,
              r.p.memory_bytes / 1e9, r.p.fits ? "yes" : "no",
              r.p.deepspeed_refuses ? "refuses" : "accepts");
}

std::string describe(const Row& r) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "ZeRO stage %d, T = %d, P = %d, D = %d, m = %d: %.1f ms per step, %s tokens/s, "
                "%.1f GB per GPU",
                r.stage, r.tp, r.pp, r.dp, r.m, r.p.step_s * 1e3, grouped(r.p.tokens_per_s).c_str(),
                r.p.memory_bytes / 1e9);
  return buf;
}

}  // namespace

int run_grid_projection_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("grid-projection", args);
  const int nodes = static_cast<int>(f.get_int("--nodes", 1, 1, 4096));
  const ModelChoice model = choose_model(f);
  GPTConfig shape = model.shape;
  const int seq = static_cast<int>(f.get_int("--seq", shape.seq_len, 1, 1 << 20));
  if (model.named) shape.seq_len = seq;
  else if (seq > shape.seq_len)
    f.fail("--seq: " + std::to_string(seq) + " is above the model's seq_len " +
           std::to_string(shape.seq_len));
  const int micro_batch =
      static_cast<int>(f.get_int("--micro-batch", model.micro_batch, 1, 1 << 20));
  const int64_t global =
      f.get_int("--global-batch-tokens", model.global_batch_tokens, 1, int64_t(1) << 40);
  const GridClusterFile file = read_grid_cluster(f.get("--network"), nodes);
  const GridCluster& k = file.cluster;
  const int world = k.world();
  // --tensor / --pipeline: one size instead of the sweep.
  auto sizes = [&](const char* option) {
    if (!f.has(option)) return std::vector<int>{1, 2, 4, 8};
    const int v = static_cast<int>(f.get_int(option, 1, 1, 1 << 20));
    if (world % v != 0)
      f.fail(std::string(option) + ": " + std::to_string(v) + " does not divide the world " +
             std::to_string(world) + " (" + std::to_string(nodes) + " nodes x " +
             std::to_string(k.gpus_per_node) + " GPUs)");
    return std::vector<int>{v};
  };
  const std::vector<int> tensor_sizes = sizes("--tensor"), pipeline_sizes = sizes("--pipeline");
  if (f.has("--tensor") && shape.n_head % tensor_sizes[0] != 0)
    f.fail("--tensor: " + std::to_string(tensor_sizes[0]) + " does not divide the model's " +
           std::to_string(shape.n_head) + " heads");
  if (f.has("--pipeline") && pipeline_sizes[0] > shape.n_layer)
    f.fail("--pipeline: " + std::to_string(pipeline_sizes[0]) + " is above the model's " +
           std::to_string(shape.n_layer) + " layers");
  const uint64_t tokens = static_cast<uint64_t>(micro_batch) * seq;
  const bool sequence_parallel = f.has("--sequence-parallel");

  std::vector<Row> rows;
  std::vector<std::string> skipped;
  std::string heads_unsplit;  // the T that do not divide the heads, "2, 4, 8"
  for (int tp : tensor_sizes) {
    if (shape.n_head % tp != 0) {
      heads_unsplit += (heads_unsplit.empty() ? "" : ", ") + std::to_string(tp);
      continue;
    }
    for (int pp : pipeline_sizes) {
      if (world % (tp * pp) != 0) continue;
      const int dp = world / (tp * pp);
      std::string why;
      if (pp > shape.n_layer) why = "P is above the layer count";
      else if (sequence_parallel && seq % tp != 0)
        why = "sequence parallelism needs the sequence " + std::to_string(seq) +
              " to be a multiple of T";
      else if (global % (static_cast<int64_t>(dp) * tokens) != 0)
        why = "the global batch is not a multiple of D x B x S = " + std::to_string(dp * tokens);
      if (!why.empty()) {
        skipped.push_back("T = " + std::to_string(tp) + ", P = " + std::to_string(pp) + ": " + why);
        continue;
      }
      for (int stage = 0; stage <= 3; stage++) {
        GridRun run;
        run.grid.dp = dp;
        run.grid.tp = tp;
        run.grid.pp = pp;
        run.grid.micro_batch = micro_batch;
        run.grid.seq = seq;
        run.grid.sequence_parallel = sequence_parallel && tp > 1;
        run.grid.micro_batches = static_cast<int>(global / (static_cast<int64_t>(dp) * tokens));
        run.zero_stage = stage;
        rows.push_back(
            {stage, tp, pp, dp, run.grid.micro_batches, predict_grid_step(shape, run, k)});
      }
    }
  }
  if (!heads_unsplit.empty())
    skipped.insert(skipped.begin(), "T = " + heads_unsplit + " (every P): T does not divide the " +
                                        std::to_string(shape.n_head) + " heads");
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.p.fits != b.p.fits) return a.p.fits;
    return a.p.fits && a.p.step_s < b.p.step_s;
  });

  GridShape whole;
  const double params = static_cast<double>(stage_local_numel(whole, shape, 0));
  std::printf("grid-projection: every number below is predicted (model output), not measured\n");
  std::printf(
      "model: %s: %d layers, width %d, %d heads, vocabulary %d, sequence %d: %s "
      "parameters (computed from the shape)\n",
      model.label.c_str(), shape.n_layer, shape.n_embd, shape.n_head, shape.vocab_size, seq,
      grouped(params).c_str());
  std::printf("cluster: %d %s x %d GPUs = %d GPUs, preset %s: %s\n", nodes,
              nodes == 1 ? "node" : "nodes", k.gpus_per_node, world, f.get("--network").c_str(),
              file.preset.c_str());
  std::printf(
      "batch: %s tokens per step, micro-batch %d x %d tokens, m = tokens / (D x B x S) "
      "micro-batches per step\n",
      grouped(static_cast<double>(global)).c_str(), micro_batch, seq);
  std::printf("assumptions (docs/grid_projection.md, zero/analysis/grid_step_time.h):\n");
  for (const std::string& a : file.assumptions) std::printf("  - %s\n", a.c_str());
  std::printf(
      "  - FLOPs per token, forward and backward: 72·C² + 12·S·C per block, 6·V·C for the LM "
      "head, 1/T of it per tensor rank (Narayanan et al. 2021); no recompute\n"
      "  - tensor: %s, none hidden, tensor ranks innermost (in a node)\n"
      "  - pipeline: 1F1B flushed every step, every stage at the slowest stage's pace, each "
      "boundary's messages at its own link, one at a time each way\n"
      "  - data: the ZeRO paper's calls in bf16 with overlap_comm, hidden only behind compute\n"
      "  - memory: model states + 1F1B activations (Korthikanti et al.%s, attention scores "
      "stored); no workspace or buffers, so 'fits' is optimistic\n"
      "  - DeepSpeed: 'refuses' marks P > 1 at ZeRO stage 2 or 3 (its pipeline engine asserts "
      "stage < 2); zerotrain runs them with parallel.pipeline_zero_anyway, so they are predicted "
      "and ranked\n",
      sequence_parallel
          ? "Megatron's sequence parallelism where T > 1 (an all-gather and a reduce-scatter for "
            "each all-reduce, each LayerNorm's gradients summed, each block LayerNorm's output "
            "gathered again for the weight gradient after it)"
          : "Megatron's all-reduces",
      sequence_parallel ? ", with sequence parallelism where T > 1" : "");
  for (const std::string& s : skipped) std::printf("not predicted: %s\n", s.c_str());
  std::printf(
      "\n(predicted, ms per step except tokens/s and GB; ranked by step among those that "
      "fit)\n");
  std::printf(
      "rank stage  T  P    D     m   step ms   tokens/s  compute  bubble  tensor "
      "pipeline data exp memory GB  fits DeepSpeed\n");
  int rank = 0;
  for (const Row& r : rows) print_row(r, r.p.fits ? std::to_string(++rank) : "-");
  std::printf("\n");
  if (rows.empty()) {
    std::printf("winner: none (no configuration could be predicted; see 'not predicted')\n");
    return 0;
  }
  if (rank == 0) {
    std::printf("winner (predicted): none fits %s GB per GPU\n",
                grouped(k.device_memory_bytes / 1e9).c_str());
    return 0;
  }
  std::printf("winner (predicted): %s\n", describe(rows[0]).c_str());
  if (rows[0].p.deepspeed_refuses)
    for (const Row& r : rows)
      if (r.p.fits && !r.p.deepspeed_refuses) {
        std::printf("winner DeepSpeed's pipeline engine accepts (predicted): %s\n",
                    describe(r).c_str());
        break;
      }
  return 0;
}

}  // namespace zt
