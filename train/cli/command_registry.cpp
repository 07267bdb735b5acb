#include "train/cli/command_registry.h"

#include <algorithm>
#include <stdexcept>

#include "train/cli/commands.h"
#include "train/loop/trainer.h"

namespace zt {
namespace {

CliOption option(const std::string& name, const std::string& value, const std::string& help) {
  return CliOption{name, value, help, false, false};
}
CliOption required(const std::string& name, const std::string& value, const std::string& help) {
  return CliOption{name, value, help, false, true};
}
CliOption repeated(const std::string& name, const std::string& value, const std::string& help) {
  return CliOption{name, value, help, true, false};
}
CliOption flag(const std::string& name, const std::string& help) {
  return CliOption{name, "", help, false, false};
}

const CliOption kSetOption =
    repeated("--set", "SECTION.KEY=VALUE", "override a config key after the file is loaded");

int run_train_command(const std::vector<std::string>& args) {
  return run_train(parse_train_args(args));
}

std::vector<Command> build_commands() {
  return {
      {{"train",
        "CONFIG",
        1,
        1,
        {kSetOption, option("--run-dir", "DIR", "where outputs go (default runs/<config name>)"),
         flag("--resume", "continue from the newest complete checkpoint in DIR/checkpoints"),
         flag("--recover",
              "after a failure: continue from the newest in-memory snapshots (own node's store, "
              "else a replica over the communicator), else the newest checkpoint"),
         option("--init-from", "MODEL.bin", "start from an llm.c GPT-2 model file"),
         option("--deepspeed", "DS.json", "import a DeepSpeed JSON config")}},
       "train a GPT from a YAML config through the ZeRO module",
       run_train_command},
      {{"prepare",
        "",
        0,
        0,
        {required("--input", "FILE|DIR|GLOB", "the text to tokenize"),
         required("--out", "DIR", "the output directory, absent or empty"),
         required("--tokenizer", "byte|bpe|gpt2|FILE.tiktoken", "how the text becomes tokens"),
         option("--vocab", "N", "bpe: pieces of the trained sentencepiece model"),
         option("--documents", "file|paragraphs", "gpt2: what one document is (default file)"),
         option("--threads", "N", "gpt2: encoding threads (default all cores)"),
         option("--val-fraction", "F", "fraction of the text for validation (default 0.05)"),
         option("--shard-tokens", "N", "tokens per shard (default 1e8)")}},
       "turn text into llm.c token shards for training and validation",
       run_prepare_command},
      {{"eval",
        "CONFIG",
        1,
        1,
        {option("--init-from", "MODEL.bin", "evaluate an llm.c model file (not with --checkpoint)"),
         option("--checkpoint", "CKPT", "evaluate a checkpoint's weights"),
         option("--batches", "N", "validation micro-batches per rank (not with --hellaswag)"),
         option("--hellaswag", "FILE.jsonl", "HellaSwag accuracy on this file instead of loss"),
         option("--limit", "N", "--hellaswag: only the first N examples"), kSetOption}},
       "mean validation loss, or HellaSwag accuracy, of a model",
       run_eval_command},
      {{"sample",
        "",
        0,
        0,
        {required("--checkpoint", "CKPT", "the checkpoint to sample from"),
         option("--prompt", "TEXT", "text the sample continues"),
         option("--tokens", "N", "tokens to generate (default train.sample_tokens)"),
         option("--temperature", "X", "sampling temperature > 0 (default train.temperature)"),
         option("--top-k", "K", "sample from the K most likely tokens (default train.top_k)"),
         option("--seed", "S", "sampling seed (default 1)")}},
       "generate text from a checkpoint",
       run_sample_command},
      {{"export",
        "OUT.bin",
        1,
        1,
        {required("--checkpoint", "CKPT", "the checkpoint to export"),
         option("--format", "llmc", "the file format (only llmc: llm.c's fp32 model file)")}},
       "write a checkpoint's weights as an llm.c model file",
       run_export_command},
      {{"plan",
        "CONFIG",
        1,
        1,
        {required("--world", "W", "ranks in the job"),
         option("--ranks-per-node", "G", "ranks per node; divides W (default W, one node)"),
         kSetOption, option("--deepspeed", "DS.json", "import a DeepSpeed JSON config"),
         flag("--calls", "list every collective call of a step"),
         option("--network", "NET.json", "predict step times on this network"),
         option("--compute-from", "SUMMARY.json", "--network: compute times of a measured run"),
         option("--compute-ms", "MICRO,OPT", "--network: compute times in milliseconds"),
         option("--tensor-curves", "COMMBENCH.json",
                "--network on a grid: tensor calls from commbench --group-size T at this layout"),
         option("--data-curves", "COMMBENCH.json",
                "--network on a grid: data-parallel calls from commbench --group-size D "
                "--group-stride T"),
         flag("--recovery",
              "add the recovery model: replicas, snapshot cost, a node failure's cost"),
         option("--relaunch-s", "S",
                "--recovery: seconds a relaunch takes, counted in the totals")}},
       "print a config's ZeRO schedule, communication volumes and memory per rank",
       run_plan_command},
      {{"explain",
        "DS_CONFIG.json",
        1,
        1,
        {required("--world", "W", "ranks in the job"),
         option("--ranks-per-node", "G", "ranks per node; divides W (default W, one node)"),
         option("--config", "CONFIG", "the model's zerotrain config (not with --model)"),
         option("--model", "tiny|gpt2|gpt2-medium|gpt2-large|gpt2-xl", "a preset model"),
         kSetOption,
         option("--deepspeed-version", "V",
                "emulate DeepSpeed release V (zero.deepspeed_version) and print what it does "
                "with this config"),
         option("--compare-to", "U",
                "with --deepspeed-version: the release to compare with (default the config's "
                "zero.deepspeed_version)")}},
       "explain what a DeepSpeed config makes ZeRO do, call by call",
       run_explain_command},
      {{"report",
        "RUNS_DIR...",
        1,
        1000,
        {option("--out", "DIR", "where the tables and plots go (default the first RUNS_DIR)"),
         flag("--no-plots", "write the tables only"),
         option("--network", "NET.json", "add each run's predicted step time on this network"),
         flag("--portability",
              "compare the systems of several RUNS_DIRs: efficiencies and performance "
              "portability per configuration"),
         repeated("--project", "NxG:RATE",
                  "with --portability: add the step-time model's projection of every "
                  "configuration on an emulated cluster of N x G ranks"),
         option("--compute-from", "SUMMARY.json",
                "the predictions' compute: this run's (default: stated emulated compute, else "
                "the stage-0 run of the same micro-batch)"),
         repeated("--tensor-curves", "COMMBENCH.json",
                  "a grid run's tensor calls: commbench --group-size T measured at its world "
                  "and T (default the link rule)"),
         repeated("--data-curves", "COMMBENCH.json",
                  "a grid run's data-parallel calls: commbench --group-size D --group-stride T "
                  "at its world (default the link rule)")}},
       "tables and plots comparing the runs under a directory",
       run_report_command},
      {{"tokenize",
        "",
        0,
        0,
        {required("--tokenizer", "byte|gpt2|FILE.tiktoken|MODEL.model", "the tokenizer"),
         flag("--decode", "read token ids and print their text"),
         flag("--eot", "start with the end-of-text token"),
         flag("--pieces", "print each token's text beside its id")}},
       "encode standard input to token ids, or decode ids to text",
       run_tokenize_command},
      {{"commbench",
        "",
        0,
        0,
        {option("--primitives", "LIST|all", "comma-separated primitives (default all)"),
         option("--dtype", "fp32,bf16|all", "element types (default the device's model dtype)"),
         option("--min-bytes", "N", "smallest size; K, M, G binary multiples (default 4)"),
         option("--max-bytes", "N", "largest size, at most 4G (default 64M)"),
         option("--warmup", "N", "warm-up calls per size (default 5)"),
         option("--iters", "N", "timed calls per size (default 20)"),
         option("--max-seconds", "S", "time budget per size; 0: always --iters (default 5)"),
         option("--root", "R", "root rank of reduce and broadcast (default 0)"),
         option("--group-size", "N",
                "blocks of N consecutive ranks measure at once, as tensor groups (default W)"),
         option("--group-stride", "S",
                "a group's ranks S apart: --group-size D --group-stride T measures a grid's "
                "data-parallel groups (default 1)"),
         option("--seed", "S", "seed of the input values (default 1)"),
         option("--device", "auto|cpu|cuda", "as system.device (default auto)"),
         option("--communicator", "auto|mpi|nccl", "as system.communicator (default auto)"),
         flag("--host", "then the host figures of offload"),
         option("--host-nvme", "DIR", "--host, with offload files timed under DIR"),
         option("--out", "FILE.json", "also write the curves as JSON")}},
       "time each collective over a range of sizes, as nccl-tests does",
       run_commbench_command},
      {{"grid-projection",
        "",
        0,
        0,
        {required("--network", "NET.json", "a network preset (configs/networks/*.json)"),
         required("--model", "1.5b|7b|20b|CONFIG.yaml", "a named GPT shape or a config's model"),
         option("--nodes", "N", "nodes of the preset's GPUs per node (default 1)"),
         option("--global-batch-tokens", "X",
                "tokens per optimizer step (default the model's: 1.5b 524288, 7b and 20b 4194304)"),
         option("--seq", "S", "sequence length (default the model's: 1.5b 1024, 7b and 20b 2048)"),
         option("--micro-batch", "B", "sequences per micro-batch (default 1.5b 4, 7b and 20b 1)"),
         option("--tensor", "T", "only this tensor size (default each of 1, 2, 4, 8)"),
         option("--pipeline", "P", "only this pipeline size (default each of 1, 2, 4, 8)"),
         flag("--sequence-parallel",
              "every T > 1 with sequence parallelism: all-gathers and reduce-scatters for the "
              "all-reduces, Korthikanti's 34/T activations")}},
       "predict the step of every (ZeRO stage, T, P) of a model on a real cluster (model output)",
       run_grid_projection_command},
      {{"config-reference",
        "",
        0,
        0,
        {flag("--grad-paths",
              "print the gradient-path table instead (docs/zero.md, from the registry)")}},
       "print every config key (type, default, range, meaning) as Markdown",
       run_config_reference_command},
  };
}

constexpr size_t kWidth = 100;

// Words joined by spaces into lines of at most kWidth columns where they fit,
// the lines after the first starting with `indent` spaces.
std::string wrapped(const std::string& first, const std::vector<std::string>& words,
                    size_t indent) {
  std::string out, line = first;
  for (const std::string& word : words) {
    if (line.size() > indent && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = std::string(indent, ' ') + word;
    } else {
      line += (line.empty() || line.back() == ' ' ? "" : " ") + word;
    }
  }
  return out + line + "\n";
}

// The words of a line of text.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t end = std::min(text.find(' ', pos), text.size());
    if (end > pos) words.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return words;
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> all = build_commands();
  return all;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (c.cli.command == name) return &c;
  return nullptr;
}

CliArgs command_args(const std::string& name, const std::vector<std::string>& args) {
  const Command* c = find_command(name);
  if (!c) throw std::logic_error("command '" + name + "' is not registered");
  return CliArgs(c->cli, args);
}

std::string commands_overview() {
  std::string out =
      "usage: zerotrain COMMAND ...   (zerotrain COMMAND --help describes its options)\n";
  for (const Command& c : commands()) {
    out += "\n  " + c.cli.command + ": " + c.summary + "\n";
    out += wrapped("    ", usage_parts(c.cli), 8);
  }
  return out;
}

std::string command_help(const Command& command) {
  const CliSpec& cli = command.cli;
  std::string out = wrapped("usage:", usage_parts(cli), 8) + "\n" + command.summary + "\n";
  size_t column = 0;
  for (const CliOption& o : cli.options)
    column = std::max(column, o.name.size() + (o.value.empty() ? 0 : 1 + o.value.size()));
  if (!cli.options.empty()) out += "\noptions:\n";
  for (const CliOption& o : cli.options) {
    std::string left = o.name + (o.value.empty() ? "" : " " + o.value);
    left.resize(column, ' ');
    std::string help = o.help;
    if (o.required) help += " (required)";
    if (o.repeatable) help += " (repeatable)";
    out += wrapped("  " + left + "  ", words_of(help), column + 4);
  }
  return out;
}

}  // namespace zt
