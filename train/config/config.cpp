// Config loading: the YAML file, then --set overrides in order, then validation
// of every key and of the cross-key rules, all before the caller prints a line.
//
// Each key remembers where its value came from (FILE:LINE or the --set text),
// so that a range or consistency error points at the line that set the value,
// not merely at the key.
#include "train/config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>

#include "data/input/escape_control.h"
#include "data/input/input_file.h"
#include "data/shard.h"
#include "train/config/config_schema.h"
#include "train/config/parallel_checks.h"
#include "train/io/json_writer.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

// yaml-cpp's parser messages in the words of the file's author; a message
// not listed passes through (yaml-cpp's are plain English, without internals).
std::string yaml_problem(const std::string& msg) {
  static const std::pair<const char*, const char*> kPlain[] = {
      {"end of map not found", "a mapping does not end where expected (check the indentation)"},
      {"end of map flow not found", "a '{' is not closed"},
      {"end of sequence not found", "a list does not end where expected (check the indentation)"},
      {"end of sequence flow not found", "a '[' is not closed"},
      {"illegal map value",
       "a ':' where no key can start (quote the value or fix the indentation)"},
      {"block sequence entries are not allowed in this context",
       "a '- ' list item where a value was expected"},
  };
  for (const auto& [yaml, plain] : kPlain)
    if (msg == yaml) return plain;
  return msg;
}

// Control bytes that a file's text brings into a message (a multi-line YAML
// scalar, yaml-cpp quoting a newline) as \xNN: errors are one line.
[[noreturn]] void fail(const std::string& message) {
  throw ConfigError(escape_control_bytes(message));
}

std::string file_line(const std::string& path, const YAML::Mark& mark) {
  return path + ":" + std::to_string(mark.is_null() ? 1 : mark.line + 1);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string keys_of(const std::string& section) {
  std::vector<std::string> names;
  for (const ConfigKey& key : config_keys())
    if (section == key.section) names.push_back(key.name);
  return join(names);
}

// " (nearest: 5632 or 6144)" for a value that is not a multiple of `multiple`.
std::string nearest_multiples(int64_t value, int64_t multiple) {
  int64_t below = value / multiple * multiple;
  if (below <= 0) return " (smallest: " + std::to_string(multiple) + ")";
  return " (nearest: " + std::to_string(below) + " or " + std::to_string(below + multiple) + ")";
}

// Where a key's value came from: the prefix of any message about it, and the
// order in which it was set (-1: not set by the file or an override).
struct KeyOrigin {
  std::string prefix;
  int order = -1;
};
using KeyOrigins = std::map<std::string, KeyOrigin>;

void validate_with_origins(const Config& c, const KeyOrigins& origins);

class ConfigLoader {
 public:
  explicit ConfigLoader(const std::string& path) { config_.source = path; }

  void load_file();
  void apply_override(const std::string& text);
  void resolve_defaults();
  void validate() const { validate_with_origins(config_, origins_); }
  const Config& config() const { return config_; }

 private:
  void set_key(const ConfigKey& key, const YAML::Node& value, const std::string& prefix);
  // `group` is "" or the dotted prefix of a nested block (zero.offload_optimizer).
  void load_section(const std::string& section, const YAML::Node& entries,
                    const std::string& group = "");

  Config config_;
  KeyOrigins origins_;
  int next_order_ = 0;
};

void ConfigLoader::load_file() {
  const std::string& path = config_.source;
  std::string text;
  try {
    text = read_small_file(path, "config file", kConfigMaxBytes);
  } catch (const DataError& e) {
    fail(e.what());
  }

  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(file_line(path, e.mark) + ": YAML syntax error: " + yaml_problem(e.msg));
  }
  // A file that sets nothing is more likely a wrong or truncated file than a
  // wish for every default.
  if (root.IsNull() || (root.IsMap() && root.size() == 0))
    fail(path + " is empty (no key set); write at least one, e.g. 'train: {steps: 200}'");
  if (!root.IsMap())
    fail(file_line(path, root.Mark()) + ": expected a map of sections (" + join(config_sections()) +
         ") at the top level, got " + describe_node(root));

  std::map<std::string, int> section_lines;
  for (const auto& entry : root) {
    std::string where = file_line(path, entry.first.Mark());
    if (!entry.first.IsScalar())
      fail(where + ": expected a section name, got " + describe_node(entry.first));
    const std::string& name = entry.first.Scalar();
    const auto& sections = config_sections();
    if (std::find(sections.begin(), sections.end(), name) == sections.end())
      fail(where + ": section '" + name + "': unknown section, expected one of " + join(sections) +
           suggest_section(name));
    auto [seen, first_time] = section_lines.emplace(name, entry.first.Mark().line + 1);
    if (!first_time)
      fail(where + ": section '" + name + "': duplicate section (first at line " +
           std::to_string(seen->second) + ")");
    if (entry.second.IsNull()) continue;  // "zero:" with nothing under it
    if (!entry.second.IsMap())
      fail(where + ": section '" + name + "': expected a map of keys, got " +
           describe_node(entry.second));
    load_section(name, entry.second);
  }
}

// Whether some key of the section is nested under `name` (name.something).
static bool is_key_group(const std::string& section, const std::string& name) {
  for (const ConfigKey& key : config_keys())
    if (section == key.section && std::string(key.name).rfind(name + ".", 0) == 0) return true;
  return false;
}

void ConfigLoader::load_section(const std::string& section, const YAML::Node& entries,
                                const std::string& group) {
  const std::string& path = config_.source;
  std::map<std::string, int> key_lines;
  for (const auto& entry : entries) {
    std::string where = file_line(path, entry.first.Mark());
    if (!entry.first.IsScalar())
      fail(where + ": section '" + section + "': expected a key name, got " +
           describe_node(entry.first));
    const std::string name = group + entry.first.Scalar();
    std::string prefix = where + ": key '" + section + "." + name + "': ";
    if (is_key_group(section, name)) {
      if (!entry.second.IsMap() && !entry.second.IsNull())
        fail(prefix + "expected a map of keys, got " + describe_node(entry.second));
      if (entry.second.IsMap()) load_section(section, entry.second, name + ".");
      continue;
    }
    const ConfigKey* key = find_config_key(section, name);
    if (!key) {
      std::string suggestion = suggest_key(section, name);
      fail(prefix + "unknown key" +
           (suggestion.empty() ? ", expected one of " + keys_of(section) : suggestion));
    }
    auto [seen, first_time] = key_lines.emplace(name, entry.first.Mark().line + 1);
    if (!first_time)
      fail(prefix + "duplicate key (first at line " + std::to_string(seen->second) + ")");
    set_key(*key, entry.second, prefix);
  }
}

void ConfigLoader::apply_override(const std::string& text) {
  std::string prefix = "--set " + text + ": ";
  size_t eq = text.find('=');
  if (eq == std::string::npos) fail(prefix + "expected SECTION.KEY=VALUE, found no '='");
  std::string path = text.substr(0, eq);
  std::string value_text = text.substr(eq + 1);
  size_t dot = path.find('.');
  if (dot == std::string::npos)
    fail(prefix + "expected SECTION.KEY=VALUE, found no '.' in '" + path + "'");
  std::string section = path.substr(0, dot);
  std::string name = path.substr(dot + 1);
  const auto& sections = config_sections();
  if (std::find(sections.begin(), sections.end(), section) == sections.end())
    fail(prefix + "unknown section '" + section + "', expected one of " + join(sections) +
         suggest_section(section));
  const ConfigKey* key = find_config_key(section, name);
  if (!key) {
    std::string suggestion = suggest_key(section, name);
    fail(prefix + "unknown key '" + path + "'" +
         (suggestion.empty() ? ", expected one of " + keys_of(section) : suggestion));
  }
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    fail(prefix + "cannot read '" + value_text + "' as a YAML scalar (" + e.msg +
         "); quote the value");
  }
  set_key(*key, value, prefix);
}

void ConfigLoader::set_key(const ConfigKey& key, const YAML::Node& value,
                           const std::string& prefix) {
  std::string problem = assign_from_yaml(key, config_, value);
  if (!problem.empty()) fail(prefix + problem);
  if (key.path() == "zero.overlap_comm") config_.zero.overlap_comm_set = true;
  origins_[key.path()] = KeyOrigin{prefix, next_order_++};
}

void ConfigLoader::resolve_defaults() { resolve_overlap_default(config_.zero); }

bool valid_fault_inject(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream in(spec);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  auto is_count = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  return parts.size() == 3 && spec.back() != ':' && is_count(parts[0]) && is_count(parts[1]) &&
         (parts[2] == "exit" || parts[2] == "throw");
}

// system.compute and the emulation keys that go with it: one duration source,
// and nothing emulation does not model.
template <typename Origin, typename Blame>
void validate_compute_emulation(const SystemConfig& s, const ZeroConfig& z, Origin origin,
                                Blame blame) {
  if (s.compute != "real" && s.compute != "emulate")
    fail(origin("system.compute").prefix + "expected one of real, emulate, got '" + s.compute +
         "'");
  const bool given = s.emulate_micro_step_ms > 0;
  if (s.compute == "real") return;  // the emulate_* keys are read only with emulate
  if (given == !s.emulate_from.empty())
    fail(blame({"system.compute", "system.emulate_from", "system.emulate_micro_step_ms"}) +
         "expected exactly one source of durations with system.compute: emulate: "
         "system.emulate_from (a summary.json) or system.emulate_micro_step_ms > 0, got " +
         (given ? "both" : "neither"));
  if (!given && s.emulate_optimizer_ms > 0)
    fail(blame({"system.emulate_optimizer_ms", "system.emulate_from"}) +
         "system.emulate_from gives the optimizer's duration too; set emulate_optimizer_ms only "
         "with emulate_micro_step_ms");
  if (z.offload_optimizer.enabled() || z.offload_param.enabled())
    fail(blame({"system.compute", "zero.offload_optimizer.device", "zero.offload_param.device"}) +
         "system.compute: emulate waits for the device's compute; offload moves work to the "
         "host, which it does not model (set zero.offload_*.device: none, or compute: real)");
}

// Range checks first, so that the cross-key rules below see sane values.
void validate_with_origins(const Config& config, const KeyOrigins& origins) {
  auto origin = [&](const std::string& path) {
    auto it = origins.find(path);
    std::string source = config.source.empty() ? "config" : config.source;
    return it != origins.end() ? it->second : KeyOrigin{source + ": key '" + path + "': ", -1};
  };
  // The origin of whichever of these keys was set last: the one to blame.
  auto blame = [&](std::initializer_list<const char*> paths) {
    KeyOrigin latest = origin(*paths.begin());
    for (const char* path : paths)
      if (origin(path).order > latest.order) latest = origin(path);
    return latest.prefix;
  };
  auto require_one_of = [&](const char* path, const std::string& value,
                            const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      fail(origin(path).prefix + "expected one of " + join(allowed) + ", got '" + value + "'");
  };

  Config c = config;  // the key table hands out mutable field pointers
  for (const ConfigKey& key : config_keys()) {
    std::string problem = check_range(key, c);
    if (!problem.empty()) fail(origin(key.path()).prefix + problem);
  }
  const TrainConfig& t = c.train;
  if (t.min_lr > t.lr)
    fail(blame({"train.min_lr", "train.lr"}) + "expected train.min_lr <= train.lr, got min_lr " +
         format_double(t.min_lr) + " > lr " + format_double(t.lr));
  require_one_of("system.device", c.system.device, {"auto", "cpu", "cuda"});
  require_one_of("parallel.rank_order", c.parallel.rank_order, {"tensor-inner", "data-inner"});
  require_one_of("parallel.pipeline_schedule", c.parallel.pipeline_schedule, {"1f1b", "gpipe"});
  for (const ParallelProblem& p : {tensor_parallel_problem(c), pipeline_parallel_problem(c)}) {
    if (p.keys.empty()) continue;
    KeyOrigin latest = origin(p.keys[0]);
    for (const char* key : p.keys)
      if (origin(key).order > latest.order) latest = origin(key);
    fail(latest.prefix + p.expected);
  }
  require_one_of("system.communicator", c.system.communicator, {"auto", "mpi", "nccl"});
  require_one_of("train.param_groups", c.train.param_groups, {"two", "one"});
  require_one_of("train.lr_schedule", c.train.lr_schedule,
                 {"cosine", "constant", "warmup_lr", "warmup_decay_lr", "warmup_cosine_lr"});
  require_one_of("train.warmup_type", c.train.warmup_type, {"linear", "log"});
  require_one_of("train.deepspeed_auto", c.train.deepspeed_auto, {"deepspeed", "hf"});
  require_one_of("train.recompute", c.train.recompute, {"none", "attn", "mlp", "block"});
  require_one_of("train.recovery", c.train.recovery, {"none", "memory"});
  require_one_of("zero.communication_data_type", c.zero.communication_data_type,
                 {"auto", "fp32", "bf16", "fp16"});
  require_one_of("zero.bf16_check_grad_overflow", c.zero.bf16_check_grad_overflow,
                 {"auto", "true", "false"});
  // A release without the key would not honour it: setting it there says something untrue.
  if (c.zero.bf16_check_grad_overflow != "auto" &&
      !deepspeed_behaviours(c.zero.deepspeed_version).has_bf16_check_grad_overflow)
    fail(blame({"zero.bf16_check_grad_overflow", "zero.deepspeed_version"}) +
         "expected zero.bf16_check_grad_overflow auto with zero.deepspeed_version " +
         c.zero.deepspeed_version.str() +
         " (DeepSpeed has bf16.check_grad_overflow from 0.17.1), got " +
         c.zero.bf16_check_grad_overflow);
  for (const char* block : {"offload_optimizer", "offload_param"}) {
    const OffloadConfig& o =
        std::string(block) == "offload_optimizer" ? c.zero.offload_optimizer : c.zero.offload_param;
    const std::string key = std::string("zero.") + block;
    require_one_of((key + ".device").c_str(), o.device, {"none", "cpu", "nvme"});
    if (o.device == "nvme" && o.nvme_path.empty())
      fail(blame({(key + ".device").c_str(), (key + ".nvme_path").c_str()}) + "expected " + key +
           ".nvme_path (a directory) with " + key + ".device: nvme");
  }
  // DeepSpeed's stage 1/2 optimizer asserts this (nccl_start_alignment_factor 2, so that
  // all-gather send buffers start 4-byte aligned in fp16); stage 3 never reads the key.
  if ((c.zero.stage == 1 || c.zero.stage == 2) && c.zero.allgather_bucket_size % 2 != 0)
    fail(blame({"zero.allgather_bucket_size", "zero.stage"}) +
         "expected an even zero.allgather_bucket_size at stages 1 and 2 (DeepSpeed asserts a "
         "multiple of its nccl_start_alignment_factor 2), got " +
         std::to_string(c.zero.allgather_bucket_size));
  if (c.zero.offload_param.enabled() && c.zero.stage != 3)
    fail(blame({"zero.offload_param.device", "zero.stage"}) +
         "expected zero.stage 3 with zero.offload_param (DeepSpeed offloads parameters only at "
         "stage 3), got stage " +
         std::to_string(c.zero.stage));
  for (const char* zpp : {"zero.zero_hpz_partition_size", "zero.zero_quantized_weights",
                          "zero.zero_quantized_gradients"}) {
    const bool on =
        std::string(zpp) == "zero.zero_hpz_partition_size"  ? c.zero.zero_hpz_partition_size > 1
        : std::string(zpp) == "zero.zero_quantized_weights" ? c.zero.zero_quantized_weights
                                                            : c.zero.zero_quantized_gradients;
    if (on && c.zero.stage != 3)
      fail(blame({zpp, "zero.stage"}) + "expected zero.stage 3 with " + zpp +
           " (ZeRO++ is a stage-3 feature), got stage " + std::to_string(c.zero.stage));
  }
  if (c.zero.mics_shard_size == 0)
    fail(origin("zero.mics_shard_size").prefix +
         "expected -1 (off) or a shard group size >= 1, got 0");
  if (c.zero.mics_shard_size > 0 && c.zero.stage != 3)
    fail(blame({"zero.mics_shard_size", "zero.stage"}) +
         "expected zero.stage 3 with zero.mics_shard_size (DeepSpeed's MiCS is a stage-3 "
         "optimizer), got stage " +
         std::to_string(c.zero.stage));
  if (c.zero.mics_hierarchical_params_gather && c.zero.mics_shard_size <= 0)
    fail(blame({"zero.mics_hierarchical_params_gather", "zero.mics_shard_size"}) +
         "expected zero.mics_shard_size >= 1 with zero.mics_hierarchical_params_gather, got " +
         std::to_string(c.zero.mics_shard_size));
  for (const char* other : {"zero.zero_hpz_partition_size", "zero.zero_quantized_weights",
                            "zero.zero_quantized_gradients", "zero.offload_optimizer.device",
                            "zero.offload_param.device"}) {
    const std::string key = other;
    const bool on = key == "zero.zero_hpz_partition_size"    ? c.zero.zero_hpz_partition_size > 1
                    : key == "zero.zero_quantized_weights"   ? c.zero.zero_quantized_weights
                    : key == "zero.zero_quantized_gradients" ? c.zero.zero_quantized_gradients
                    : key == "zero.offload_optimizer.device" ? c.zero.offload_optimizer.enabled()
                                                             : c.zero.offload_param.enabled();
    if (on && c.zero.mics_shard_size > 0)
      fail(blame({"zero.mics_shard_size", other}) + "expected " + key +
           " off with zero.mics_shard_size " + std::to_string(c.zero.mics_shard_size) +
           " (DeepSpeed's MiCS ignores ZeRO++ and refuses offload)");
  }
  if (t.hellaswag_every > 0 && t.hellaswag_file.empty())
    fail(blame({"train.hellaswag_every", "train.hellaswag_file"}) +
         "expected train.hellaswag_file (a hellaswag_val.jsonl) with train.hellaswag_every " +
         std::to_string(t.hellaswag_every));
  validate_compute_emulation(c.system, c.zero, origin, blame);
  if (c.system.failure_timeout_s > 0 &&
      c.system.failure_timeout_s * 1e3 < 2.0 * c.system.heartbeat_ms)
    fail(
        blame({"system.failure_timeout_s", "system.heartbeat_ms"}) +
        "expected system.failure_timeout_s of at least two heartbeats (2 x system.heartbeat_ms = " +
        format_double(2e-3 * c.system.heartbeat_ms) + " s) or 0 (off), got " +
        format_double(c.system.failure_timeout_s));
  const std::string& fault = c.system.fault_inject;
  if (!fault.empty() && !valid_fault_inject(fault))
    fail(origin("system.fault_inject").prefix +
         "expected empty or RANK:STEP:exit|throw (e.g. '1:5:throw'), got '" + fault + "'");
  if (c.model.n_embd % c.model.n_head != 0)
    fail(blame({"model.n_embd", "model.n_head"}) +
         "expected model.n_embd to be a multiple of model.n_head, got n_embd " +
         std::to_string(c.model.n_embd) + " and n_head " + std::to_string(c.model.n_head));
  int64_t tokens_per_micro_step = int64_t(t.micro_batch) * c.model.seq_len;
  if (t.global_batch_tokens % tokens_per_micro_step != 0)
    fail(blame({"train.global_batch_tokens", "train.micro_batch", "model.seq_len"}) +
         "expected train.global_batch_tokens to be a multiple of micro_batch*seq_len = " +
         std::to_string(t.micro_batch) + "*" + std::to_string(c.model.seq_len) + " = " +
         std::to_string(tokens_per_micro_step) + ", got " + std::to_string(t.global_batch_tokens) +
         nearest_multiples(t.global_batch_tokens, tokens_per_micro_step));
}

// A YAML node as JSON, scalars typed as YAML reads them.
std::string yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    std::string o = "{";
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (o.size() > 1) o += ",";
      o += json_escape(it->first.as<std::string>()) + ":" + yaml_to_json(it->second);
    }
    return o + "}";
  }
  if (n.IsScalar()) {
    const std::string s = n.Scalar();
    if (s == "true" || s == "false") return s;
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && n.Tag() != "!") return s;
    return json_escape(s);
  }
  return "null";
}

}  // namespace

std::string config_to_json(const Config& c) { return yaml_to_json(YAML::Load(config_to_yaml(c))); }

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  ConfigLoader loader(path);
  loader.load_file();
  for (const std::string& text : overrides) loader.apply_override(text);
  loader.resolve_defaults();
  loader.validate();
  return loader.config();
}

void validate_config(const Config& c) { validate_with_origins(c, KeyOrigins{}); }

int data_parallel_size(const Config& c, int world_size) {
  if (world_size < 1)
    fail("world size: expected an integer >= 1, got " + std::to_string(world_size));
  if (world_size % c.parallel.tensor != 0)
    fail(c.source + ": key 'parallel.tensor': expected a size dividing the world size " +
         std::to_string(world_size) + ", got " + std::to_string(c.parallel.tensor));
  if (world_size / c.parallel.tensor % c.parallel.pipeline != 0)
    fail(c.source + ": key 'parallel.pipeline': expected a size dividing the world size " +
         std::to_string(world_size) + " over parallel.tensor " + std::to_string(c.parallel.tensor) +
         ", got " + std::to_string(c.parallel.pipeline));
  return world_size / c.parallel.tensor / c.parallel.pipeline;
}

// world_size counts the data-parallel ranks below: every rank of a tensor
// group reads the same micro-batch.
void validate_for_world(const Config& c, int job_ranks) {
  const int world_size = data_parallel_size(c, job_ranks);
  int64_t tokens_per_round = int64_t(c.train.micro_batch) * c.model.seq_len * world_size;
  int64_t tokens = c.train.global_batch_tokens;
  if (tokens_per_round <= 0 || tokens % tokens_per_round != 0)
    fail(c.source +
         ": key 'train.global_batch_tokens': expected a multiple of micro_batch*seq_len*world = " +
         std::to_string(c.train.micro_batch) + "*" + std::to_string(c.model.seq_len) + "*" +
         std::to_string(world_size) + " = " + std::to_string(tokens_per_round) +
         (c.parallel.tensor * c.parallel.pipeline > 1 ? " at data-parallel size "
                                                      : " at world size ") +
         std::to_string(world_size) + ", got " + std::to_string(tokens) +
         (tokens_per_round > 0 ? nearest_multiples(tokens, tokens_per_round) : ""));
  // DeepSpeed's _create_zero_param_parallel_group takes min(size, W), which must divide W;
  // checked here, on every rank alike, before any engine builds its groups.
  const int hpz = std::min(std::max(1, c.zero.zero_hpz_partition_size), world_size);
  if (c.zero.stage == 3 && world_size % hpz != 0)
    fail(c.source + ": key 'zero.zero_hpz_partition_size': expected a size dividing the world " +
         "size " + std::to_string(world_size) + " (DeepSpeed requires it), got " +
         std::to_string(c.zero.zero_hpz_partition_size));
  if (c.zero.stage == 3 && c.zero.mics_shard_size > 0 && world_size % c.zero.mics_shard_size != 0)
    fail(c.source + ": key 'zero.mics_shard_size': expected a shard group size dividing the " +
         "world size " + std::to_string(world_size) + " (DeepSpeed asserts it), got " +
         std::to_string(c.zero.mics_shard_size));
}

int grad_accum_steps(const Config& c, int job_ranks) {
  validate_for_world(c, job_ranks);
  return int(c.train.global_batch_tokens /
             (int64_t(c.train.micro_batch) * c.model.seq_len * data_parallel_size(c, job_ranks)));
}

int snapshot_interval(const TrainConfig& t) {
  if (t.snapshot_every > 0) return t.snapshot_every;
  return t.recovery == "memory" ? 1 : 0;
}

Recompute recompute_level(const Config& c) {
  Recompute r;
  if (!parse_recompute(c.train.recompute, &r))
    throw ConfigError("key 'train.recompute': expected one of none, attn, mlp, block, got '" +
                      c.train.recompute + "'");
  return r;
}

// Keys in table order, grouped by section; reloading the text gives the same
// Config (with overlap_comm then explicitly set).
std::string config_to_yaml(const Config& c) {
  Config copy = c;
  std::string out = "# zerotrain effective config";
  out += c.source.empty() ? "\n" : " (loaded from " + c.source + ")\n";
  std::string section;
  for (const ConfigKey& key : config_keys()) {
    if (section != key.section) {
      section = key.section;
      out += section + ":\n";
    }
    out += std::string("  ") + key.name + ": " + field_to_yaml(key.field(copy));
    if (key.path() == "zero.overlap_comm" && !c.zero.overlap_comm_set)
      out += "  # not set: DeepSpeed's default for stage " + std::to_string(c.zero.stage);
    out += "\n";
  }
  return out;
}

}  // namespace zt
