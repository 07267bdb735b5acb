// eval, sample and export: single-process commands that read a checkpoint or an
// llm.c model file into a replicated (stage 0, one rank) model.
#include "train/commands.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>

#include "data/loader.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/llmc_model_file.h"
#include "train/runtime.h"
#include "train/sampler.h"
#include "zero/communicators.h"
#include "zero/engine.h"

namespace zt {
namespace {

struct Flags {
  std::vector<std::string> positional, overrides;
  std::vector<std::pair<std::string, std::string>> named;
  std::string get(const std::string& k, const std::string& dflt = "") const {
    for (auto& [n, v] : named)
      if (n == k) return v;
    return dflt;
  }
};

Flags parse_flags(const std::string& cmd, const std::vector<std::string>& args,
                  const std::vector<std::string>& known) {
  Flags f;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& s = args[i];
    if (s.rfind("--", 0) != 0) {
      f.positional.push_back(s);
      continue;
    }
    if (i + 1 >= args.size()) throw ConfigError(cmd + ": " + s + " needs a value");
    const std::string v = args[++i];
    if (s == "--set") {
      f.overrides.push_back(v);
      continue;
    }
    bool ok = false;
    for (const auto& k : known) ok = ok || k == s;
    if (!ok) throw ConfigError(cmd + ": unknown option '" + s + "'");
    f.named.push_back({s, v});
  }
  return f;
}

int to_int(const std::string& cmd, const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(cmd + ": " + flag + " expects an integer, got '" + v + "'");
}

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
  m.engine = make_zero_engine(m.cfg.zero, *m.table, *m.ops, *m.comm);
  m.engine->init_weights(weights.data());
  return m;
}

std::vector<float> checkpoint_weights(const std::string& ckpt, Config* cfg_out) {
  *cfg_out = load_config(ckpt + "/config.yaml", {});
  read_checkpoint_meta(ckpt);
  ParamTable table(cfg_out->model);
  return read_checkpoint_weights(ckpt, table.total());
}

}  // namespace

int run_eval_command(const std::vector<std::string>& args) {
  Flags f = parse_flags("eval", args, {"--init-from", "--checkpoint", "--batches"});
  if (f.positional.size() != 1)
    throw ConfigError(
        "usage: zerotrain eval CONFIG [--init-from F | --checkpoint CKPT] [--batches N]");
  Config cfg = load_config(f.positional[0], f.overrides);
  const int batches =
      to_int("eval", "--batches", f.get("--batches", std::to_string(cfg.train.eval_batches)));
  DataLoader val(cfg.data.val, cfg.model.vocab_size, cfg.train.micro_batch, cfg.model.seq_len, 0, 1,
                 1, cfg.train.seed, false);
  ParamTable table(cfg.model);
  std::vector<float> w;
  if (!f.get("--init-from").empty()) {
    w = read_llmc_model(f.get("--init-from"), table);
  } else if (!f.get("--checkpoint").empty()) {
    Config saved;
    w = checkpoint_weights(f.get("--checkpoint"), &saved);
    if (w.size() != table.total())
      throw ConfigError("eval: the checkpoint's model shape differs from " + f.positional[0]);
  } else {
    w.resize(table.total());
    init_gpt2_weights(table, cfg.train.seed, w.data());
  }
  LoadedModel m = load_model(cfg, w);
  const int B = cfg.train.micro_batch, T = cfg.model.seq_len;
  GPT model(*m.table, *m.ops, B, T);
  std::vector<int> in(static_cast<size_t>(B) * T), tgt(in.size());
  double sum = 0;
  for (int j = 0; j < batches; j++) {
    val.micro_batch(j, 0, in.data(), tgt.data());
    sum += model.forward_loss(in.data(), tgt.data(), *m.engine);
  }
  std::printf("eval: mean loss %.6f over %d batches of %d x %d tokens of %s\n",
              sum / (static_cast<double>(batches) * B * T), batches, B, T, cfg.data.val.c_str());
  return 0;
}

int run_sample_command(const std::vector<std::string>& args) {
  Flags f =
      parse_flags("sample", args,
                  {"--checkpoint", "--prompt", "--tokens", "--temperature", "--top-k", "--seed"});
  if (f.get("--checkpoint").empty() || !f.positional.empty())
    throw ConfigError(
        "usage: zerotrain sample --checkpoint CKPT [--prompt TEXT] [--tokens N] "
        "[--temperature X] [--top-k K] [--seed S]");
  Config cfg;
  std::vector<float> w = checkpoint_weights(f.get("--checkpoint"), &cfg);
  std::unique_ptr<Tokenizer> tok = make_tokenizer(cfg.data.tokenizer);
  LoadedModel m = load_model(cfg, w);
  GPT model(*m.table, *m.ops, 1, cfg.model.seq_len);
  SampleSettings s;
  s.tokens =
      to_int("sample", "--tokens", f.get("--tokens", std::to_string(cfg.train.sample_tokens)));
  s.top_k = to_int("sample", "--top-k", f.get("--top-k", std::to_string(cfg.train.top_k)));
  s.seed = static_cast<uint64_t>(to_int("sample", "--seed", f.get("--seed", "1")));
  try {
    s.temperature = std::stod(f.get("--temperature", std::to_string(cfg.train.temperature)));
  } catch (const std::exception&) {
    throw ConfigError("sample: --temperature expects a number");
  }
  if (s.temperature <= 0) throw ConfigError("sample: --temperature must be > 0");
  std::vector<int> prompt = tok->encode(f.get("--prompt", "\n"));
  for (int t : prompt)
    if (t >= cfg.model.vocab_size)
      throw ConfigError("sample: prompt token out of the model's vocabulary");
  std::printf("%s\n",
              printable_utf8(tok->decode(sample_tokens(model, *m.engine, prompt, s))).c_str());
  return 0;
}

int run_export_command(const std::vector<std::string>& args) {
  Flags f = parse_flags("export", args, {"--checkpoint", "--format"});
  if (f.get("--checkpoint").empty() || f.positional.size() != 1)
    throw ConfigError("usage: zerotrain export --checkpoint CKPT --format llmc OUT.bin");
  if (f.get("--format", "llmc") != "llmc")
    throw ConfigError("export: --format '" + f.get("--format") +
                      "' is not supported (expected llmc)");
  Config cfg;
  std::vector<float> w = checkpoint_weights(f.get("--checkpoint"), &cfg);
  ParamTable table(cfg.model);
  write_llmc_model(f.positional[0], table, w);
  std::printf("export: %s -> %s (llm.c fp32 model file, version 3, %zu parameters)\n",
              f.get("--checkpoint").c_str(), f.positional[0].c_str(), table.total());
  return 0;
}

}  // namespace zt
