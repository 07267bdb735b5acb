// eval, sample and export: single-process commands that read a checkpoint or an
// llm.c model file into a replicated (stage 0, one rank) model.
#include "train/cli/commands.h"

#include <cstdint>
#include <cstdio>
#include <memory>

#include "data/loader.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "train/cli/command_registry.h"
#include "train/config/config.h"
#include "train/config/zero_setup.h"
#include "train/io/checkpoint.h"
#include "train/io/llmc_model_file.h"
#include "train/io/output_target.h"
#include "train/loop/data_fallback.h"
#include "train/loop/hellaswag.h"
#include "train/loop/init_weights.h"
#include "train/loop/runtime.h"
#include "train/loop/sampler.h"
#include "zero/comm/communicators.h"
#include "zero/stages/engine.h"

namespace zt {
namespace {

// A one-rank stage-0 engine holding `weights`.
struct LoadedModel {
  Config cfg;
  std::unique_ptr<ParamTable> table;
  std::unique_ptr<Ops> ops;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<ZeroEngine> engine;
};

LoadedModel load_model(Config cfg, const std::vector<float>& weights) {
  LoadedModel m;
  m.cfg = cfg;
  m.cfg.zero = ZeroConfig();
  m.table.reset(new ParamTable(cfg.model));
  Runtime rt = make_runtime(cfg.system);
  m.ops = std::move(rt.ops);
  m.comm = make_single_communicator(*m.ops);
  check_offload_paths(m.cfg.zero);
  m.engine = make_zero_engine(zero_setup(m.cfg, *m.table, 1), *m.table, *m.ops, *m.comm);
  m.engine->init_weights(weights.data());
  return m;
}

// A checkpoint's weights, every file verified, and the config saved with it
// (checked to describe the same model as the metadata).
std::vector<float> checkpoint_weights(const std::string& ckpt, Config* cfg_out) {
  const CheckpointMeta meta = read_checkpoint_meta(ckpt);
  *cfg_out = load_config(ckpt + "/config.yaml", {});
  check_same_model(ckpt, meta, cfg_out->model, nullptr, ckpt + "/config.yaml");
  return read_checkpoint_weights(ckpt, meta);
}

}  // namespace

int run_eval_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("eval", args);
  if (f.has("--init-from") && f.has("--checkpoint"))
    f.fail("--init-from and --checkpoint exclude each other");
  const bool hellaswag = f.has("--hellaswag");
  if (hellaswag && f.has("--batches")) f.fail("--batches and --hellaswag exclude each other");
  if (f.has("--limit") && !hellaswag) f.fail("--limit applies to --hellaswag");
  Config cfg = load_config(f.positional()[0], f.all("--set"));
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  for (const std::string& note : apply_data_fallbacks(cfg.data, !hellaswag))
    if (rank == 0) std::printf("%s\n", note.c_str());
  const int batches = static_cast<int>(f.get_int("--batches", cfg.train.eval_batches, 1, 1 << 30));
  std::unique_ptr<DataLoader> val;
  HellaswagSet examples;
  if (hellaswag) {
    std::vector<HellaswagExample> read = read_hellaswag(f.get("--hellaswag"));
    read.resize(static_cast<size_t>(f.get_int("--limit", static_cast<int64_t>(read.size()), 1,
                                              static_cast<int64_t>(read.size()))));
    examples = tokenize_hellaswag(read, *make_tokenizer(cfg.data.tokenizer), cfg.model.vocab_size,
                                  f.get("--hellaswag"));
  } else {
    val.reset(new DataLoader(cfg.data.val, cfg.model.vocab_size, cfg.train.micro_batch,
                             cfg.model.seq_len, 0, 1, 1, cfg.train.seed, false));
  }
  ParamTable table(cfg.model);
  std::vector<float> w;
  if (!f.get("--init-from").empty()) {
    w = read_llmc_model(f.get("--init-from"), table);
  } else if (!f.get("--checkpoint").empty()) {
    const std::string ckpt = f.get("--checkpoint");
    const CheckpointMeta meta = read_checkpoint_meta(ckpt);
    check_same_model(ckpt, meta, cfg.model, nullptr, f.positional()[0]);
    w = read_checkpoint_weights(ckpt, meta);
  } else {
    w.resize(table.total());
    init_gpt2_weights(table, cfg.train.seed, w.data());
  }
  LoadedModel m = load_model(cfg, w);
  const int B = cfg.train.micro_batch, T = cfg.model.seq_len;
  if (hellaswag) {
    // Each rank holds the whole model and scores every world-th example.
    GPT model(*m.table, *m.ops, B, hellaswag_positions(examples, T));
    const HellaswagResult r =
        score_hellaswag(model, *m.engine, examples, rank, world, sum_over_ranks);
    if (rank == 0) std::printf("%s\n", describe_hellaswag(r, f.get("--hellaswag")).c_str());
    return 0;
  }
  GPT model(*m.table, *m.ops, B, T);
  std::vector<int> in(static_cast<size_t>(B) * T), tgt(in.size());
  // Batch j on rank j mod W; the ranks' sums add to the one-rank sum.
  double sum = 0;
  for (int j = rank; j < batches; j += world) {
    val->micro_batch(j, 0, in.data(), tgt.data());
    sum += model.forward_loss(in.data(), tgt.data(), *m.engine);
  }
  sum = sum_over_ranks(sum);
  if (rank == 0)
    std::printf("eval: mean loss %.6f over %d batches of %d x %d tokens of %s\n",
                sum / (static_cast<double>(batches) * B * T), batches, B, T, cfg.data.val.c_str());
  return 0;
}

int run_sample_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("sample", args);
  // The options are checked before the checkpoint is read; absent ones take
  // the checkpoint's config below.
  SampleSettings s;
  s.tokens = static_cast<int>(f.get_int("--tokens", 0, 0, 1 << 24));
  s.top_k = static_cast<int>(f.get_int("--top-k", 0, 0, 1 << 30));
  s.seed = static_cast<uint64_t>(f.get_int("--seed", 1, 0, INT64_MAX));
  s.temperature = f.get_double("--temperature", 1, open_between(0, 1e9, true));
  Config cfg;
  std::vector<float> w = checkpoint_weights(f.get("--checkpoint"), &cfg);
  if (!f.has("--tokens")) s.tokens = cfg.train.sample_tokens;
  if (!f.has("--top-k")) s.top_k = cfg.train.top_k;
  if (!f.has("--temperature")) s.temperature = cfg.train.temperature;
  std::unique_ptr<Tokenizer> tok = make_tokenizer(cfg.data.tokenizer);
  LoadedModel m = load_model(cfg, w);
  GPT model(*m.table, *m.ops, 1, cfg.model.seq_len);
  s.vocab_limit = tok->vocab_size();
  std::vector<int> prompt = sample_prompt(*tok, f.get("--prompt"));
  for (int t : prompt)
    if (t >= cfg.model.vocab_size)
      throw ConfigError("sample: prompt token out of the model's vocabulary");
  std::printf("%s\n", sample_text(*tok, sample_tokens(model, *m.engine, prompt, s)).c_str());
  return 0;
}

int run_export_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("export", args);
  if (f.get("--format", "llmc") != "llmc")
    f.fail("--format '" + f.get("--format") + "' is not supported (expected llmc)");
  if (const std::string problem = output_file_problem(f.positional()[0]); !problem.empty())
    f.fail(f.positional()[0] + ": " + problem);
  Config cfg;
  std::vector<float> w = checkpoint_weights(f.get("--checkpoint"), &cfg);
  ParamTable table(cfg.model);
  write_llmc_model(f.positional()[0], table, w);
  std::printf("export: %s -> %s (llm.c fp32 model file, version 3, %zu parameters)\n",
              f.get("--checkpoint").c_str(), f.positional()[0].c_str(), table.total());
  return 0;
}

}  // namespace zt
