// DeepSpeed JSON import (see deepspeed_import.h for the rules): the file as DeepSpeed reads it
// (data/json_reader.h), the top-level keys, batch sizes and precision here;
// zero_optimization in train/deepspeed/deepspeed_zero_import.cpp, the optimizer and scheduler in
// train/deepspeed/deepspeed_optimizer.cpp.
#include "train/deepspeed/deepspeed_import.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <map>

#include "data/input/escape_control.h"
#include "data/input/input_file.h"
#include "data/shard.h"
#include "train/config/config_schema.h"
#include "train/deepspeed/deepspeed_import_context.h"
#include "train/deepspeed/deepspeed_release_keys.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {

std::string DsContext::at(int line, const std::string& key) const {
  return path + ":" + std::to_string(line) + ": key '" + key + "': ";
}

// Keys and values quoted from the JSON may hold control bytes ("a\nb"):
// written as \xNN, errors and warnings stay one line each.
void DsContext::fail(int line, const std::string& key, const std::string& what) const {
  throw ConfigError(escape_control_bytes(at(line, key) + what));
}

void DsContext::warn(int line, const std::string& key, const std::string& what) const {
  warnings.push_back(escape_control_bytes(at(line, key) + what));
}

bool DsContext::read_bool(const JsonValue& v, int line, const std::string& key) const {
  std::string t;
  for (char ch : v.text) t += char(std::tolower(static_cast<unsigned char>(ch)));
  bool scalar = v.kind == JsonValue::Kind::boolean || v.kind == JsonValue::Kind::string ||
                v.kind == JsonValue::Kind::number;
  if (scalar) {
    for (const char* yes : {"true", "1", "yes", "on", "t", "y"})
      if (t == yes) return true;
    for (const char* no : {"false", "0", "no", "off", "f", "n"})
      if (t == no) return false;
  }
  fail(line, key, "expected a boolean (true, false, 0 or 1), got " + describe_json(v));
}

int64_t DsContext::read_int(const JsonValue& v, int line, const std::string& key,
                            int64_t min) const {
  int64_t out = 0;
  bool scalar = v.kind == JsonValue::Kind::number || v.kind == JsonValue::Kind::string;
  if (!scalar || !parse_int64(v.text, out)) {
    double x = 0;
    const bool too_large = scalar && parse_number(v.text, x) && x == std::floor(x);
    fail(line, key,
         std::string("expected an integer") +
             (too_large ? " in [" + std::to_string(min) + ", 9223372036854775807]" : "") +
             ", got " + describe_json(v));
  }
  if (out < min)
    fail(line, key, "expected an integer >= " + std::to_string(min) + ", got " + v.text);
  return out;
}

double DsContext::read_number(const JsonValue& v, int line, const std::string& key, double min,
                              bool exclusive) const {
  double out = 0;
  bool scalar = v.kind == JsonValue::Kind::number || v.kind == JsonValue::Kind::string;
  if (!scalar || !parse_number(v.text, out))
    fail(line, key, "expected a number, got " + describe_json(v));
  if (exclusive ? out <= min : out < min)
    fail(line, key,
         std::string("expected a number ") + (exclusive ? "> " : ">= ") + format_double(min) +
             ", got " + v.text);
  return out;
}

HfAutoValue DsContext::trainer_auto(int line, const std::string& key) {
  if (!hf())
    fail(line, key,
         "\"auto\" is filled in only by the HF Trainer (DeepSpeed alone fails on it); set "
         "train.deepspeed_auto=hf to fill it as the Trainer does, or write a value");
  std::optional<HfAutoValue> v = hf_auto_value(key, arguments, world, c.zero.stage);
  if (!v)
    fail(line, key,
         std::string("\"auto\": the HF Trainer has no rule for this key (") +
             kHfTrainerVersionsRead + "), so DeepSpeed would get \"auto\" and fail on it");
  autos_filled.push_back(key + " = " + v->text());
  return *v;
}

std::optional<HfAutoValue> DsContext::pydantic_auto(int line, const std::string& key, int stage) {
  std::optional<HfAutoValue> v = hf() ? hf_auto_value(key, arguments, world, stage) : std::nullopt;
  if (v) {
    autos_filled.push_back(key + " = " + v->text());
    return v;
  }
  if (hf())
    warn(line, key,
         std::string("\"auto\": the HF Trainer ") +
             (hf_auto_value(key, arguments, world, 3) ? "fills this key only at ZeRO stage 3"
                                                      : "has no rule for this key") +
             " (" + kHfTrainerVersionsRead + ") and DeepSpeed drops it: DeepSpeed's default");
  autos_defaulted.push_back(key);
  return std::nullopt;
}

std::string DsContext::auto_summary() const {
  if (autos_filled.empty() && autos_defaulted.empty() && autos_on.empty()) return "";
  auto list = [](const char* what, const std::vector<std::string>& keys) {
    std::string s;
    for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + k;
    return keys.empty() ? std::string() : std::string("; ") + what + ": " + s;
  };
  const std::string resolver =
      hf() ? std::string("the HF Trainer's rules (train.deepspeed_auto: hf; ") +
                 kHfTrainerVersionsRead + "), then DeepSpeed " + release.str() + "'s"
           : "DeepSpeed " + release.str() + "'s own reading (train.deepspeed_auto: deepspeed)";
  return path + ": \"auto\" resolved by " + resolver + list("filled in", autos_filled) +
         list("DeepSpeed's default", autos_defaulted) +
         list("read as on (DeepSpeed before 0.17.1 takes the string as true)", autos_on);
}

const JsonValue& DsContext::require_object(const JsonValue& v, int line,
                                           const std::string& key) const {
  if (v.kind != JsonValue::Kind::object)
    fail(line, key, "expected a JSON object, got " + describe_json(v));
  return v;
}

namespace {

// Why common top-level keys are ignored, where a reason helps more than "not honoured".
std::string ignore_reason(const std::string& key) {
  static const std::map<std::string, std::string> reasons = {
      {"steps_per_print", "zerotrain prints every train.log_every steps"},
      {"wall_clock_breakdown", "zerotrain's summary.json always has the comm timing"},
      {"comms_logger", "zerotrain's counterpart is system.comm_trace"},
      {"prescale_gradients", "zerotrain sums gradients and scales once"},
      {"gradient_predivide_factor", "zerotrain sums gradients and scales once"},
  };
  auto it = reasons.find(key);
  return it == reasons.end() ? "not honoured by zerotrain, ignored"
                             : "not honoured (" + it->second + "), ignored";
}

// A batch-size key as found in the JSON, and where its number came from.
struct BatchKey {
  bool present = false;
  int64_t value = 0;
  int line = 0;
  std::string origin;  // "line 3", or the zerotrain key that "auto" took
};

class DeepSpeedImporter {
 public:
  DeepSpeedImporter(DsContext& ctx) : ctx_(ctx), c_(ctx.c) {}
  void run();
  const char* deepspeed_dtype() const { return bf16_ ? "bf16" : fp16_ ? "fp16" : "fp32"; }

 private:
  void import_precision(const JsonMember& m);
  void import_check_grad_overflow(const JsonMember& m, const std::string& key);
  void import_data_types(const JsonMember& m);
  void read_batch_key(BatchKey& key, const JsonMember& m);
  void import_batch(int deepspeed_world);
  void check_precision();

  DsContext& ctx_;
  Config& c_;
  BatchKey train_batch_, micro_batch_, accumulation_;
  int bf16_line_ = 0, fp16_line_ = 0, dtype_line_ = 0;
  bool bf16_ = false, fp16_ = false;  // as DeepSpeed would run
  std::string grad_accum_dtype_;      // "fp32", "bf16", "fp16" or "" (unset)
  bool optimizer_offload_to_cpu_ = false;
};

void DeepSpeedImporter::run() {
  // A regular file of at most 1 MiB: a FIFO or a device is refused, not read forever.
  std::string text;
  try {
    text = read_small_file(ctx_.path, "DeepSpeed config", kConfigMaxBytes);
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  JsonValue root;
  try {
    root = parse_json(text, ctx_.path, JsonDialect::Hjson);
  } catch (const JsonError& e) {
    throw ConfigError(
        std::string(e.what()) +
        (e.duplicate_key
             ? "; DeepSpeed refuses duplicate keys (\"Duplicate keys in DeepSpeed config\")"
             : ""));
  }
  if (root.kind != JsonValue::Kind::object)
    throw ConfigError(ctx_.path + ":" + std::to_string(root.line) +
                      ": expected a JSON object at the top level, got " + describe_json(root));
  for (const ReleaseKeyWarning& w : warnings_for_release(root, ctx_.release)) {
    if (w.key.empty()) ctx_.warnings.push_back(ctx_.path + ": " + w.text);
    else ctx_.warn(w.line, w.key, w.text);
  }

  // What the JSON governs starts from DeepSpeed's defaults (deepspeed_import.h).
  ZeroConfig zero_defaults;
  zero_defaults.native_reduce_scatter = c_.zero.native_reduce_scatter;
  zero_defaults.allgather_bucketed = c_.zero.allgather_bucketed;
  zero_defaults.deepspeed_version =
      c_.zero.deepspeed_version;  // which release, not a ds_config key
  c_.zero = zero_defaults;
  c_.train.grad_clip = gradient_clipping_default(ctx_.release);  // 1.0 from 0.19.3

  const JsonMember *optimizer = nullptr, *scheduler = nullptr;
  for (const JsonMember& m : root.members) {
    const std::string& name = m.key;
    const JsonValue& v = m.value[0];
    if (name == "zero_optimization") {
      import_zero_optimization(ctx_, m, &optimizer_offload_to_cpu_);
    } else if (name == "train_batch_size") {
      read_batch_key(train_batch_, m);
    } else if (name == "train_micro_batch_size_per_gpu") {
      read_batch_key(micro_batch_, m);
    } else if (name == "gradient_accumulation_steps") {
      // Only "auto" asks zerotrain's accumulation, which needs its batch to fit the world.
      read_batch_key(accumulation_, m);
    } else if (name == "gradient_clipping") {
      if (v.is_string("auto")) {
        c_.train.grad_clip = ctx_.trainer_auto(m.line, name).numbers[0];
      } else if (v.kind == JsonValue::Kind::null) {
        ctx_.fail(m.line, name,
                  "DeepSpeed fails on null here (it compares it with 0); expected a "
                  "number >= 0 (0: no clipping)");
      } else {
        c_.train.grad_clip = ctx_.read_number(v, m.line, name, 0);
      }
    } else if (name == "communication_data_type") {
      std::string t;
      for (char ch : v.text) t += char(std::tolower(static_cast<unsigned char>(ch)));
      if (v.kind == JsonValue::Kind::null) t = "auto";
      else if (v.kind != JsonValue::Kind::string || (t != "fp32" && t != "bf16" && t != "fp16"))
        ctx_.fail(m.line, name,
                  "expected one of fp32, bf16, fp16 (DeepSpeed refuses anything "
                  "else, \"auto\" too), got " +
                      describe_json(v));
      c_.zero.communication_data_type = t;
    } else if (name == "bf16" || name == "bfloat16" || name == "fp16") {
      import_precision(m);
    } else if (name == "data_types") {
      import_data_types(m);
    } else if (name == "activation_checkpointing") {
      import_activation_checkpointing(ctx_, m);
    } else if (name == "tensor_parallel") {
      import_tensor_parallel(ctx_, m);
    } else if (name == "pipeline") {
      import_pipeline(ctx_, m);
    } else if (name == "optimizer") {
      optimizer = &m;
    } else if (name == "scheduler") {
      scheduler = &m;
    } else {
      ctx_.warn(m.line, name, ignore_reason(name));
    }
  }
  import_batch(check_grid(ctx_));
  import_optimizer(ctx_, optimizer);
  import_scheduler(ctx_, scheduler, optimizer != nullptr);
  fit_min_lr(ctx_, optimizer);
  resolve_overlap_default(c_.zero);
  check_precision();
  if (const std::string summary = ctx_.auto_summary(); !summary.empty())
    ctx_.warnings.push_back(summary);
  validate_config(c_);
}

// bf16 / fp16: DeepSpeed's pydantic blocks. Only "enabled" means anything to zerotrain; every
// other key gets its own warning, fp16's all say why (zerotrain has no fp16 mode).
void DeepSpeedImporter::import_precision(const JsonMember& block) {
  const bool is_fp16 = block.key == "fp16";
  const JsonValue& v = ctx_.require_object(block.value[0], block.line, block.key);
  (is_fp16 ? fp16_line_ : bf16_line_) = block.line;
  for (const JsonMember& m : v.members) {
    const std::string key = block.key + "." + m.key;
    const JsonValue& value = m.value[0];
    if (m.key == "enabled") {
      bool enabled = false;
      if (!value.is_string("auto")) {
        enabled = ctx_.read_bool(value, m.line, key);
      } else if (ctx_.hf() && hf_auto_value(key, ctx_.arguments, ctx_.world, c_.zero.stage)) {
        enabled = ctx_.trainer_auto(m.line, key).numbers[0] != 0;
      } else if (deepspeed_precision_auto_is_on(ctx_.release)) {
        enabled = true;  // a plain dict before 0.17.1: the string is truthy
        ctx_.autos_on.push_back(key);
      } else {
        ctx_.pydantic_auto(m.line, key, c_.zero.stage);  // dropped: off
      }
      (is_fp16 ? fp16_ : bf16_) = enabled;
      (is_fp16 ? fp16_line_ : bf16_line_) = m.line;
    } else if (!is_fp16 && m.key == "check_grad_overflow") {
      import_check_grad_overflow(m, key);
    } else if (is_fp16) {
      ctx_.warn(m.line, key,
                "not honoured (zerotrain has no fp16 mode and no loss scaling), ignored");
    } else {
      ctx_.warn(m.line, key, "not honoured by zerotrain, ignored");
    }
  }
}

// bf16.check_grad_overflow: from 0.17.1 DeepSpeed's engine hands it to the stage 1/2 optimizer
// when bf16 is on (engine.py, _configure_zero_optimizer; stage_1_and_2.py's step checks overflow
// only when it is set); zero.bf16_check_grad_overflow carries it to the schedule. Before 0.17.1
// the bf16 block is a plain dict that never reads the key.
void DeepSpeedImporter::import_check_grad_overflow(const JsonMember& m, const std::string& key) {
  const JsonValue& value = m.value[0];
  const std::string v = ctx_.release.str();
  if (!deepspeed_behaviours(ctx_.release).has_bf16_check_grad_overflow) {
    ctx_.warn(m.line, key,
              "not a key of DeepSpeed " + v + " (added in 0.17.1); DeepSpeed " + v +
                  " reads the bf16 block as a plain dict and ignores it, and so does zerotrain");
    return;
  }
  if (value.is_string("auto")) {
    ctx_.pydantic_auto(m.line, key, c_.zero.stage);  // dropped: the release's default
    return;
  }
  if (value.kind == JsonValue::Kind::null)
    ctx_.fail(m.line, key, "DeepSpeed refuses null here (a bool field); expected true or false");
  c_.zero.bf16_check_grad_overflow = ctx_.read_bool(value, m.line, key) ? "true" : "false";
}

void DeepSpeedImporter::import_data_types(const JsonMember& block) {
  const JsonValue& v = ctx_.require_object(block.value[0], block.line, block.key);
  for (const JsonMember& m : v.members) {
    const std::string key = "data_types." + m.key;
    if (m.key != "grad_accum_dtype") {
      ctx_.warn(m.line, key, "not honoured by zerotrain, ignored");
      continue;
    }
    const std::string& t = m.value[0].text;
    // DeepSpeed's DtypeEnum spellings.
    if (t == "fp32" || t == "float32" || t == "float" || t == "torch.float32")
      grad_accum_dtype_ = "fp32";
    else if (t == "bf16" || t == "bfloat16" || t == "torch.bfloat16") grad_accum_dtype_ = "bf16";
    else if (t == "fp16" || t == "float16" || t == "half" || t == "torch.float16")
      grad_accum_dtype_ = "fp16";
    else if (m.value[0].kind == JsonValue::Kind::null) continue;
    else
      ctx_.fail(m.line, key, "expected one of fp32, bf16, fp16, got " + describe_json(m.value[0]));
    dtype_line_ = m.line;
  }
}

void DeepSpeedImporter::read_batch_key(BatchKey& key, const JsonMember& m) {
  const JsonValue& v = m.value[0];
  if (v.kind == JsonValue::Kind::null) return;  // DeepSpeed: as if absent
  key.present = true;
  key.line = m.line;
  if (v.is_string("auto")) {
    const HfAutoValue filled = ctx_.trainer_auto(m.line, m.key);
    key.value = int64_t(filled.numbers[0]);
    key.origin = filled.source + " (\"auto\")";
    return;
  }
  key.value = ctx_.read_int(v, m.line, m.key, 1);
  if (key.value > INT_MAX)
    ctx_.fail(m.line, m.key, "expected an integer in [1, 2147483647], got " + v.text);
  key.origin = "line " + std::to_string(m.line);
}

// DeepSpeed's batch arithmetic: train_batch = micro * accumulation * world, where world is the
// ranks DeepSpeed counts (`deepspeed_world`, check_grid); a mismatch names where each number came
// from. zerotrain's global batch is the sequences the data-parallel ranks read.
void DeepSpeedImporter::import_batch(int deepspeed_world) {
  if (!train_batch_.present && !micro_batch_.present) {
    if (accumulation_.present)
      ctx_.fail(accumulation_.line, "gradient_accumulation_steps",
                "gradient_accumulation_steps alone does not fix the batch: expected "
                "train_batch_size or train_micro_batch_size_per_gpu as well");
    return;  // DeepSpeed would fail; the HF Trainer fills them from its arguments
  }
  // Each factor is below 2^31 (read_batch_key), so no product below overflows.
  const int64_t world = deepspeed_world;
  const int64_t grid = int64_t(c_.parallel.tensor) * c_.parallel.pipeline;
  // A grid that does not divide the world is validate_for_world's to name.
  const int64_t data_parallel = ctx_.world % grid == 0 ? ctx_.world / grid : world;
  int64_t& batch = train_batch_.value;
  int64_t& micro = micro_batch_.value;
  const int64_t accumulation = accumulation_.present ? accumulation_.value : 1;
  const std::string world_origin =
      "world size " + std::to_string(world) +
      (world == ctx_.world
           ? std::string(": the ranks started")
           : ": the data-parallel ranks, " + std::to_string(ctx_.world) +
                 " started over parallel.tensor " + std::to_string(c_.parallel.tensor) +
                 " x parallel.pipeline " + std::to_string(c_.parallel.pipeline));
  auto sources = [&](bool with_micro, bool with_accumulation) {
    std::string s = " (";
    if (with_micro)
      s += "train_micro_batch_size_per_gpu " + std::to_string(micro) + ": " + micro_batch_.origin +
           "; ";
    if (with_accumulation)
      s += "gradient_accumulation_steps " + std::to_string(accumulation) + ": " +
           accumulation_.origin + "; ";
    return s + world_origin + ")";
  };
  auto product = [](std::initializer_list<int64_t> xs) {
    std::string s;
    for (int64_t x : xs) s += (s.empty() ? "" : "*") + std::to_string(x);
    return s;
  };
  const std::string got = ", got " + std::to_string(batch) + " (" + train_batch_.origin + ")";
  if (train_batch_.present && micro_batch_.present) {
    if (accumulation_.present && batch != micro * accumulation * world)
      ctx_.fail(train_batch_.line, "train_batch_size",
                "expected train_micro_batch_size_per_gpu * gradient_accumulation_steps * world "
                "size = " +
                    product({micro, accumulation, world}) + " = " +
                    std::to_string(micro * accumulation * world) + sources(true, true) + got);
    if (!accumulation_.present && batch % (micro * world) != 0)
      ctx_.fail(train_batch_.line, "train_batch_size",
                "expected a multiple of train_micro_batch_size_per_gpu * world size = " +
                    product({micro, world}) + " = " + std::to_string(micro * world) +
                    sources(true, false) + got);
  } else if (train_batch_.present) {
    if (batch % (accumulation * world) != 0)
      ctx_.fail(train_batch_.line, "train_batch_size",
                "expected a multiple of " +
                    (accumulation_.present ? "gradient_accumulation_steps * world size = " +
                                                 product({accumulation, world})
                                           : std::string("the world size")) +
                    " = " + std::to_string(accumulation * world) +
                    sources(false, accumulation_.present) + got);
    micro = batch / (accumulation * world);
  } else {
    batch = micro * accumulation * world;
  }
  if (batch > INT64_MAX / c_.model.seq_len) {
    const BatchKey& blamed = train_batch_.present ? train_batch_ : micro_batch_;
    ctx_.fail(blamed.line,
              train_batch_.present ? "train_batch_size" : "train_micro_batch_size_per_gpu",
              "a batch of " + std::to_string(batch) + " sequences of " +
                  std::to_string(c_.model.seq_len) + " tokens overflows the token count");
  }
  c_.train.micro_batch = int(micro);
  // Under AutoTP alone DeepSpeed counts every rank although the tensor ranks share each
  // micro-batch: the distinct sequences per step are batch / world * data-parallel ranks.
  const int64_t sequences = world == data_parallel ? batch : batch / world * data_parallel;
  if (sequences != batch)
    ctx_.warn(ctx_.grid.autotp_line, "tensor_parallel.autotp_size",
              "DeepSpeed's train_batch_size " + std::to_string(batch) + " counts all " +
                  std::to_string(world) + " ranks, but each group of " +
                  std::to_string(c_.parallel.tensor) +
                  " tensor ranks reads one micro-batch: zerotrain's global batch is the " +
                  std::to_string(sequences) + " distinct sequences (" +
                  product({micro, batch / (micro * world), data_parallel}) + ")");
  c_.train.global_batch_tokens = sequences * c_.model.seq_len;
}

void DeepSpeedImporter::check_precision() {
  if (fp16_ && bf16_)
    ctx_.fail(fp16_line_, "fp16.enabled",
              "fp16 and bf16 are both enabled; DeepSpeed accepts only one");
  if (fp16_)
    ctx_.warn(fp16_line_, "fp16.enabled",
              "zerotrain has no fp16 mode (nor loss scaling): it trains in bf16 on the GPU and "
              "fp32 on the CPU");
  else if (!bf16_)
    ctx_.warnings.push_back(ctx_.path +
                            ": key 'bf16.enabled': not enabled, so DeepSpeed would train in fp32; "
                            "zerotrain trains in bf16 on the GPU and fp32 on the CPU");
  if (grad_accum_dtype_.empty()) return;
  if (bf16_ && grad_accum_dtype_ == "fp32" && c_.zero.stage == 1 && !optimizer_offload_to_cpu_)
    ctx_.warn(dtype_line_, "data_types.grad_accum_dtype",
              "bf16 + ZeRO stage 1 + fp32 gradient accumulation: DeepSpeed runs this with its "
              "BF16_Optimizer, which takes none of the four stage-1/2 gradient paths; zerotrain "
              "runs the stage-1 path its zero switches select, so communication differs from "
              "that run");
  else
    ctx_.warn(dtype_line_, "data_types.grad_accum_dtype",
              "not honoured (zerotrain keeps gradients in its training precision: bf16 on the "
              "GPU, fp32 on the CPU), ignored");
}

}  // namespace

void apply_deepspeed_config(const std::string& json_path, Config& c,
                            std::vector<std::string>& warnings, int world_size,
                            std::string* deepspeed_dtype, DeepSpeedRelease release) {
  if (world_size < 1)
    throw ConfigError("world size: expected an integer >= 1, got " + std::to_string(world_size));
  DsContext ctx(json_path, world_size, c, warnings, release);
  DeepSpeedImporter importer(ctx);
  importer.run();
  if (deepspeed_dtype) *deepspeed_dtype = importer.deepspeed_dtype();
}

}  // namespace zt
