// The config key table, typed scalar parsing and "did you mean" suggestions.
#include "train/config/config_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {

// The key name is the field name, spelled once.
// clang-format off
#define ZT_KEY(section, name, range, meaning) \
  ConfigKey{#section, #name, [](Config& c) -> FieldRef { return &c.section.name; }, range, meaning}
// clang-format on

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = {
      ZT_KEY(model, n_layer, at_least(1), "transformer blocks"),
      ZT_KEY(model, n_head, at_least(1), "attention heads; n_embd must be a multiple of it"),
      ZT_KEY(model, n_embd, at_least(1), "width of the residual stream"),
      ZT_KEY(model, vocab_size, between(2, 2147483648.0, false),
             "rows of the token embedding (may be padded above the tokenizer's vocabulary); every "
             "token in the shards must be below it"),
      ZT_KEY(model, seq_len, at_least(1), "sequence length T, also the sampling window"),
      ZT_KEY(data, train, any_value(),
             "training shards: a file or a glob, matches read in sorted order as one token stream"),
      ZT_KEY(data, val, any_value(), "validation shards, read in file order"),
      ZT_KEY(data, tokenizer, any_value(),
             "byte, gpt2, a .tiktoken file or a sentencepiece .model file; encodes prompts and "
             "HellaSwag, decodes samples"),
      ZT_KEY(data, train_fallback, any_value(),
             "shards read instead of data.train, with a notice, while data.train matches no file"),
      ZT_KEY(data, val_fallback, any_value(),
             "the same for data.val, consulted only when validation runs"),
      ZT_KEY(train, steps, at_least(1), "optimizer steps in the run; the LR schedule spans them"),
      ZT_KEY(train, micro_batch, at_least(1), "B: sequences per micro-step per rank"),
      ZT_KEY(train, global_batch_tokens, at_least(1),
             "tokens per optimizer step over all ranks; a multiple of micro_batch x seq_len x W, "
             "the quotient being the micro-steps (gradient accumulation)"),
      ZT_KEY(train, lr, above(0), "peak learning rate"),
      ZT_KEY(train, min_lr, at_least(0), "learning rate at the last step; at most lr"),
      ZT_KEY(train, warmup_steps, at_least(0), "warm-up steps of the LR schedule"),
      ZT_KEY(train, weight_decay, at_least(0),
             "AdamW decoupled weight decay, on 2-D matmul and embedding weights only"),
      ZT_KEY(train, grad_clip, at_least(0),
             "clip to this global gradient norm; 0 disables clipping"),
      ZT_KEY(train, beta1, between(0, 1, false), "AdamW beta1"),
      ZT_KEY(train, beta2, between(0, 1, false), "AdamW beta2"),
      ZT_KEY(train, eps, above(0), "AdamW epsilon"),
      ZT_KEY(train, eval_every, at_least(0),
             "validation every N steps, at the last step and once before a fresh start; 0 disables "
             "it"),
      ZT_KEY(train, eval_batches, at_least(1), "validation micro-batches per rank per evaluation"),
      ZT_KEY(train, sample_every, at_least(0),
             "print a sample every N steps and at the last step; 0 disables sampling"),
      ZT_KEY(train, sample_tokens, at_least(0), "tokens generated per sample"),
      ZT_KEY(train, temperature, above(0), "sampling temperature"),
      ZT_KEY(train, top_k, at_least(0),
             "sample from the k most likely tokens; 0 means the whole vocabulary"),
      ZT_KEY(train, checkpoint_every, at_least(0),
             "checkpoint every N steps and at the last step; 0 disables checkpoints"),
      ZT_KEY(train, keep_checkpoints, at_least(1), "complete checkpoints kept, the newest"),
      ZT_KEY(train, recovery, any_value(),
             "memory: snapshot the training state into the node's shared memory (/dev/shm) every "
             "snapshot_every steps, for train --recover; none: no snapshots unless "
             "snapshot_every > 0"),
      ZT_KEY(train, snapshot_every, at_least(0),
             "in-memory snapshot every N steps (CPU backend); 0: off, or 1 with "
             "train.recovery: memory"),
      ZT_KEY(train, seed, any_value(), "seed of weight initialisation, data shuffling and samples"),
      ZT_KEY(train, log_every, at_least(0),
             "progress line every N steps (0: only the first, last and evaluating steps); "
             "metrics.jsonl gets every step"),
      ZT_KEY(train, hellaswag_every, at_least(0),
             "HellaSwag accuracy every N steps and at the last step; 0 disables it"),
      ZT_KEY(train, hellaswag_file, any_value(),
             "the HellaSwag JSONL file; required when hellaswag_every > 0"),
      ZT_KEY(train, param_groups, any_value(),
             "optimizer parameter groups as ZeRO partitions them: two (decayed weights apart from "
             "biases and norms, as the HF Trainer) or one"),
      ZT_KEY(train, lr_schedule, any_value(),
             "cosine (warm-up, then cosine to min_lr), constant, or DeepSpeed's warmup_lr, "
             "warmup_decay_lr, warmup_cosine_lr"),
      ZT_KEY(train, warmup_type, any_value(),
             "warm-up curve of the DeepSpeed schedules: linear or log"),
      ZT_KEY(train, warmup_start_lr, at_least(0), "where warmup_cosine_lr warms up from"),
      ZT_KEY(train, deepspeed_auto, any_value(),
             "how --deepspeed reads \"auto\": deepspeed (as DeepSpeed does) or hf (as the HF "
             "Trainer fills it in)"),
      ZT_KEY(train, recompute, any_value(),
             "activations recomputed in the backward instead of kept: none, attn, mlp or block"),
      ZT_KEY(zero, stage, between(0, 3, true), "ZeRO stage"),
      ZT_KEY(zero, reduce_bucket_size, at_least(1),
             "gradient bucket size in elements (stage 0: all-reduce chunk size)"),
      ZT_KEY(zero, allgather_bucket_size, at_least(1),
             "elements per chunked parameter all-gather; used only with allgather_bucketed"),
      ZT_KEY(zero, reduce_scatter, any_value(),
             "DeepSpeed's switch: false gives a plain all-reduce per bucket (stages 1/2; stage 3 "
             "only with contiguous_gradients, for buckets that fit)"),
      ZT_KEY(zero, use_multi_rank_bucket_allreduce, any_value(),
             "DeepSpeed's switch: with reduce_scatter, true gives the packed all-reduce and false "
             "per-owner reduces (stages 1/2)"),
      ZT_KEY(zero, contiguous_gradients, any_value(),
             "DeepSpeed's switch: false gives the buffered all-reduce fallback (stages 1/2)"),
      ZT_KEY(zero, overlap_comm, any_value(),
             "overlap collectives with compute (stage 3 also prefetches); true for stage 3 when "
             "not set"),
      ZT_KEY(zero, stage3_prefetch_bucket_size, at_least(0),
             "elements of upcoming units prefetched (with overlap_comm)"),
      ZT_KEY(zero, stage3_param_persistence_threshold, at_least(0),
             "tensors with at most this many elements stay whole on every rank"),
      ZT_KEY(zero, stage3_max_live_parameters, at_least(0),
             "a unit stays gathered after use only while at most this many elements are gathered"),
      ZT_KEY(zero, stage3_max_reuse_distance, at_least(0),
             "a unit stays gathered if used again within this many elements of other units"),
      ZT_KEY(zero, stage3_model_persistence_threshold, at_least(0),
             "persistent tensors stop once their total would exceed this many elements"),
      ZT_KEY(zero, sub_group_size, at_least(1),
             "stage 3 steps, and takes one norm, per sub-group of this many partitioned elements"),
      ZT_KEY(zero, communication_data_type, any_value(),
             "dtype of every gradient reduction: auto (the model's), fp32, bf16 or fp16"),
      ZT_KEY(zero, round_robin_gradients, any_value(),
             "stages 1/2: deal each group's tensors round-robin over the owners before building "
             "its buffer"),
      ZT_KEY(zero, bf16_check_grad_overflow, any_value(),
             "DeepSpeed's bf16.check_grad_overflow (releases from 0.17.1): auto (the release's "
             "default: off before 0.19.3, on from it), true or false; bf16 at stages 1/2 issues "
             "the overflow check (one uint8 all-reduce per step) when on"),
      ZT_KEY(zero, native_reduce_scatter, any_value(),
             "zerotrain's own: one true reduce-scatter per bucket in stages 1/2 (overrides the "
             "three DeepSpeed switches)"),
      ZT_KEY(zero, allgather_bucketed, any_value(),
             "zerotrain's own: chunk the stage-1/2 parameter all-gather by allgather_bucket_size"),
      ZT_KEY(zero, stage3_block_gathers, any_value(),
             "zerotrain's own: stage 3 gathers each transformer block whole in one call"),
      ZT_KEY(zero, zero_hpz_partition_size, at_least(1),
             "stage 3, hpZ: secondary partition over groups of this many ranks (1: off)"),
      ZT_KEY(zero, zero_quantized_weights, any_value(), "stage 3, qwZ: int8 parameter all-gathers"),
      ZT_KEY(zero, zero_quantized_gradients, any_value(),
             "stage 3, qgZ: hierarchical int4 all-to-all gradient reduction"),
      ZT_KEY(zero, mics_shard_size, at_least(-1),
             "stage 3, MiCS: shard over groups of this many consecutive ranks and replicate "
             "across the groups (-1: off; must divide the world size)"),
      ZT_KEY(zero, mics_hierarchical_params_gather, any_value(),
             "stage 3, MiCS: gather parameters across the shard group's nodes, then inside the "
             "node"),
      ZT_KEY(zero, deepspeed_version, any_value(),
             "the DeepSpeed release whose behaviour set the ZeRO schedule follows (which calls "
             "each switch issues, the overflow check, stage 3's gathers); releases outside the "
             "verified range are refused (docs/zero.md, Emulating a DeepSpeed release)"),
      ZT_KEY(zero, offload_optimizer.device, any_value(),
             "where the optimizer state lives: none, cpu or nvme"),
      ZT_KEY(zero, offload_optimizer.nvme_path, any_value(),
             "directory of the optimizer state's files with device nvme"),
      ZT_KEY(zero, offload_optimizer.pin_memory, any_value(),
             "pinned host buffers for the optimizer offload"),
      ZT_KEY(zero, offload_optimizer.buffer_count, between(1, 1024, true),
             "host buffers the optimizer offload streams through"),
      ZT_KEY(zero, offload_param.device, any_value(),
             "stage 3: where the parameter shard lives: none, cpu or nvme"),
      ZT_KEY(zero, offload_param.nvme_path, any_value(),
             "directory of the parameter shard's files with device nvme"),
      ZT_KEY(zero, offload_param.pin_memory, any_value(),
             "pinned host buffers for the parameter offload"),
      ZT_KEY(zero, offload_param.buffer_count, between(1, 1024, true),
             "host buffers the parameter offload streams through"),
      ZT_KEY(system, device, any_value(),
             "backend: auto (a usable GPU, otherwise the CPU), cpu or cuda"),
      ZT_KEY(system, communicator, any_value(),
             "auto (NCCL on GPUs when W > 1, else MPI), mpi or nccl"),
      ZT_KEY(
          system, deterministic, any_value(),
          "deterministic kernels; zerotrain has no faster variant, so false only prints a notice"),
      ZT_KEY(system, comm_trace, any_value(),
             "write one JSON line per collective to RUN/comm_trace_rank<R>.jsonl"),
      ZT_KEY(system, fault_inject, any_value(),
             "RANK:STEP:exit|throw makes one rank fail at the start of a step (tests only); empty: "
             "off"),
      ZT_KEY(system, heartbeat_ms, between(1, 60000, true),
             "failure detection: each rank sends every other a heartbeat this often, ms "
             "(docs/recovery.md)"),
      ZT_KEY(system, failure_timeout_s, at_least(0),
             "failure detection: a rank not heard from for this long is lost, s; a dead process "
             "is seen at once; 0: no peer watch"),
      ZT_KEY(system, compute, any_value(),
             "real, or emulate: timed waits replace the model's arithmetic, the collectives stay "
             "real (docs/compute_emulation.md)"),
      ZT_KEY(system, emulate_from, any_value(),
             "emulate: a summary.json whose measured timing gives the durations"),
      ZT_KEY(system, emulate_micro_step_ms, at_least(0),
             "emulate: forward + backward of one micro-step, ms (instead of emulate_from)"),
      ZT_KEY(system, emulate_optimizer_ms, at_least(0),
             "emulate: the whole model's optimizer step on one device, ms; each rank waits its "
             "share"),
      ZT_KEY(system, emulate_forward_fraction, open_between(0, 1, false),
             "emulate: the forward's share of a micro-step (backward: the rest)"),
      ZT_KEY(system, emulate_time_scale, above(0),
             "emulate: every duration multiplied by it (a slower link needs slower compute)"),
      ZT_KEY(parallel, tensor, between(1, 1024, true),
             "tensor parallelism (Megatron-LM's split) over this many ranks; ZeRO runs over the "
             "world divided by it (docs/parallel_grid.md)"),
      ZT_KEY(parallel, pipeline, between(1, 1024, true),
             "pipeline stages, each a contiguous run of blocks (embedding on the first, head on "
             "the last); the accumulation steps are its micro-batches (docs/pipeline.md)"),
      ZT_KEY(parallel, pipeline_schedule, any_value(),
             "1f1b (PipeDream-Flush, Megatron-LM's) or gpipe (every forward, then every "
             "backward)"),
      ZT_KEY(parallel, rank_order, any_value(),
             "tensor-inner (a tensor group is consecutive ranks, inside a node) or data-inner"),
      ZT_KEY(parallel, pipeline_zero_anyway, any_value(),
             "run ZeRO stages 2 and 3 under a pipeline, which DeepSpeed's pipeline engine "
             "refuses, to measure how they interfere (docs/pipeline.md)"),
      ZT_KEY(parallel, sequence_parallel, any_value(),
             "sequence parallelism over the tensor group: LayerNorms and residual adds on "
             "1/tensor of the tokens, all-gathers and reduce-scatters in place of the "
             "all-reduces (docs/parallel_grid.md)"),
  };
  return keys;
}

#undef ZT_KEY

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> sections = {"model", "data",   "train",
                                                    "zero",  "system", "parallel"};
  return sections;
}

const ConfigKey* find_config_key(const std::string& section, const std::string& name) {
  for (const ConfigKey& key : config_keys())
    if (section == key.section && name == key.name) return &key;
  return nullptr;
}

// Suggestions: a known name is "close" to a typed one when the edit distance
// (case-insensitive) is at most 2 and smaller than the typed length, or when
// one is a prefix of the other (typed at least 3 characters). The closest wins;
// ties go to the earlier key in the table.
namespace {

std::string lowercase(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above_cell = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above_cell;
    }
  }
  return row[b.size()];
}

// Distance if `known` is close to `typed`, else SIZE_MAX.
size_t closeness(const std::string& typed, const std::string& known) {
  std::string t = lowercase(typed), k = lowercase(known);
  size_t d = edit_distance(t, k);
  bool near = d <= 2 && d < t.size();
  bool prefix = t.size() >= 3 && (k.rfind(t, 0) == 0 || t.rfind(k, 0) == 0);
  return near || prefix ? d : SIZE_MAX;
}

std::string did_you_mean(const std::string& what) { return " (did you mean '" + what + "'?)"; }

// The closest key: of `section` only, or of every section when it is empty.
const ConfigKey* closest_key(const std::string& section, const std::string& name) {
  const ConfigKey* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const ConfigKey& key : config_keys()) {
    if (!section.empty() && section != key.section) continue;
    size_t d = closeness(name, key.name);
    if (d < best_distance) best = &key, best_distance = d;
  }
  return best;
}

}  // namespace

std::string suggest_key(const std::string& section, const std::string& name) {
  for (const ConfigKey& key : config_keys())
    if (name == key.name && section != key.section) return did_you_mean(key.path());
  if (const ConfigKey* key = closest_key(section, name)) return did_you_mean(key->name);
  if (const ConfigKey* key = closest_key("", name)) return did_you_mean(key->path());
  return "";
}

std::string suggest_name(const std::string& typed, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const std::string& name : known) {
    size_t d = closeness(typed, name);
    if (d < best_distance) best = &name, best_distance = d;
  }
  return best ? did_you_mean(*best) : "";
}

std::string suggest_section(const std::string& name) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& section : config_sections()) {
    size_t d = closeness(name, section);
    if (d < best_distance) best = section, best_distance = d;
  }
  if (!best.empty()) return did_you_mean(best);
  // A key written at the top level, outside its section.
  for (const ConfigKey& key : config_keys())
    if (name == key.name) return did_you_mean(key.path());
  if (const ConfigKey* key = closest_key("", name)) return did_you_mean(key->path());
  return "";
}

std::string describe_node(const YAML::Node& value) {
  if (value.IsScalar()) return "'" + value.Scalar() + "'";
  if (value.IsMap()) return "a map";
  if (value.IsSequence()) return "a sequence";
  return "nothing (null)";
}

namespace {

// Parses `text` into one field type; returns the problem or "".
struct ScalarAssigner {
  const std::string& text;

  std::string got() const { return ", got " + quote_value(text); }
  // An integer too large for the field is told the range; anything else that
  // is not an integer, only that.
  std::string not_integer(const char* range) const {
    double v = 0;
    const bool integral = parse_number(text, v) && v == std::floor(v);
    return std::string("expected an integer") + (integral ? range : "") + got();
  }
  std::string operator()(int* field) const {
    int64_t v = 0;
    if (!parse_int64(text, v) || v < INT_MIN || v > INT_MAX)
      return not_integer(" in [-2147483648, 2147483647]");
    *field = static_cast<int>(v);
    return "";
  }
  std::string operator()(int64_t* field) const {
    return parse_int64(text, *field)
               ? ""
               : not_integer(" in [-9223372036854775808, 9223372036854775807]");
  }
  std::string operator()(uint64_t* field) const {
    return parse_uint64(text, *field) ? "" : not_integer(" in [0, 18446744073709551615]");
  }
  std::string operator()(double* field) const {
    return parse_number(text, *field) ? "" : "expected a finite number" + got();
  }
  std::string operator()(bool* field) const {
    return parse_bool(text, *field) ? "" : "expected a boolean (true or false)" + got();
  }
  std::string operator()(std::string* field) const {
    *field = text;
    return "";
  }
  std::string operator()(DeepSpeedRelease* field) const {
    try {
      *field = parse_deepspeed_release(text);
    } catch (const std::invalid_argument&) {
      return "expected a DeepSpeed release MAJOR.MINOR.PATCH from " + verified_release_range() +
             got();
    }
    return "";
  }
};

// "expected an integer", "expected a boolean (true or false)", ...
std::string type_name(const FieldRef& field) {
  const std::string type = field_type(field);
  if (std::holds_alternative<bool*>(field)) return "a boolean (true or false)";
  return (type[0] == 'i' ? "an " : "a ") + type;
}

}  // namespace

std::string assign_from_yaml(const ConfigKey& key, Config& c, const YAML::Node& value) {
  FieldRef field = key.field(c);
  if (value.IsNull() && std::holds_alternative<std::string*>(field)) {
    *std::get<std::string*>(field) = "";
    return "";
  }
  if (!value.IsScalar())
    return std::string("expected ") + type_name(field) + ", got " + describe_node(value);
  return std::visit(ScalarAssigner{value.Scalar()}, field);
}

std::string check_range(const ConfigKey& key, Config& c) {
  const Range& r = key.range;
  FieldRef field = key.field(c);
  double v = 0;
  std::string text;
  if (auto* rel = std::get_if<DeepSpeedRelease*>(&field)) {
    try {
      deepspeed_behaviours(**rel);
    } catch (const std::invalid_argument&) {
      return "expected a DeepSpeed release from " + verified_release_range() + " (verified call " +
             "for call), got " + (*rel)->str();
    }
    return "";
  }
  if (auto* i = std::get_if<int*>(&field)) v = **i, text = std::to_string(**i);
  else if (auto* l = std::get_if<int64_t*>(&field)) v = double(**l), text = std::to_string(**l);
  else if (auto* d = std::get_if<double*>(&field)) v = **d, text = format_double(**d);
  else return "";
  bool low_ok = !r.has_min || (r.min_inclusive ? v >= r.min : v > r.min);
  bool high_ok = !r.has_max || (r.max_inclusive ? v <= r.max : v < r.max);
  if (low_ok && high_ok) return "";
  return std::string("expected ") + type_name(field) + " " + range_text(r) + ", got " + text;
}

const char* field_type(const FieldRef& field) {
  switch (field.index()) {
    case 0:
    case 1: return "integer";
    case 2: return "non-negative integer";
    case 3: return "number";
    case 4: return "boolean";
    case 6: return "release";
    default: return "string";
  }
}

namespace {

// Double-quoted YAML scalar: every string reads back verbatim, whatever it holds.
std::string quote_yaml(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", u);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

struct YamlFormatter {
  std::string operator()(const int* v) const { return std::to_string(*v); }
  std::string operator()(const int64_t* v) const { return std::to_string(*v); }
  std::string operator()(const uint64_t* v) const { return std::to_string(*v); }
  std::string operator()(const double* v) const {
    std::string s = format_double(*v);
    // Keep it visibly a float for readers with YAML typing ("1.0", not "1").
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  std::string operator()(const bool* v) const { return *v ? "true" : "false"; }
  std::string operator()(const std::string* v) const { return quote_yaml(*v); }
  std::string operator()(const DeepSpeedRelease* v) const { return quote_yaml(v->str()); }
};

}  // namespace

std::string field_to_yaml(FieldRef field) { return std::visit(YamlFormatter{}, field); }

}  // namespace zt
