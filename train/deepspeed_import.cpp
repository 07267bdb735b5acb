// DeepSpeed JSON import (see deepspeed_import.h for the mapping). JSON is read
// with yaml-cpp, JSON being YAML; values go through the same typed parsers and
// range checks as the YAML config, so "5e8", 5e8 and 500000000 are one value.
#include "train/deepspeed_import.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "train/config_schema.h"

namespace zt {
namespace {

[[noreturn]] void fail(const std::string& message) { throw ConfigError(message); }

// zero_optimization keys zerotrain honours: DeepSpeed's JSON name (or its
// pydantic field name) -> the zero.* key of the same meaning.
const std::map<std::string, std::string>& honoured_zero_keys() {
  static const std::map<std::string, std::string> keys = {
      {"stage", "stage"},
      {"reduce_bucket_size", "reduce_bucket_size"},
      {"allgather_bucket_size", "allgather_bucket_size"},
      {"reduce_scatter", "reduce_scatter"},
      {"use_multi_rank_bucket_allreduce", "use_multi_rank_bucket_allreduce"},
      {"contiguous_gradients", "contiguous_gradients"},
      {"overlap_comm", "overlap_comm"},
      {"stage3_prefetch_bucket_size", "stage3_prefetch_bucket_size"},
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size"},
      {"stage3_param_persistence_threshold", "stage3_param_persistence_threshold"},
      {"param_persistence_threshold", "stage3_param_persistence_threshold"},
      {"stage3_max_live_parameters", "stage3_max_live_parameters"},
      {"max_live_parameters", "stage3_max_live_parameters"},
      {"stage3_max_reuse_distance", "stage3_max_reuse_distance"},
      {"max_reuse_distance", "stage3_max_reuse_distance"},
  };
  return keys;
}

// Why common keys are ignored, where a reason helps more than "not honoured".
std::string ignore_reason(const std::string& key) {
  static const std::map<std::string, std::string> reasons = {
      {"optimizer",
       "zerotrain always runs AdamW with train.lr, beta1, beta2, eps and weight_decay"},
      {"scheduler", "zerotrain's schedule comes from train.lr, min_lr and warmup_steps"},
      {"zero_optimization.offload_optimizer", "zerotrain keeps optimizer state on the device"},
      {"zero_optimization.offload_param", "zerotrain keeps parameters on the device"},
      {"zero_optimization.sub_group_size", "zerotrain steps each rank's whole shard at once"},
      {"zero_optimization.round_robin_gradients",
       "zerotrain assigns gradient partitions contiguously"},
  };
  auto it = reasons.find(key);
  return it == reasons.end() ? "not honoured by zerotrain, ignored"
                             : "not honoured (" + it->second + "), ignored";
}

enum class DType { unset, fp32, bf16, fp16 };

// A batch-size key as found in the JSON.
struct BatchKey {
  bool present = false;
  bool automatic = false;
  int64_t value = 0;
  std::string prefix;
};

class DeepSpeedImporter {
 public:
  DeepSpeedImporter(const std::string& path, int world_size, Config& c,
                    std::vector<std::string>& warnings)
      : path_(path), world_(world_size), c_(c), warnings_(warnings) {}
  void run();

 private:
  std::string prefix(const YAML::Node& key_node, const std::string& key) const {
    return path_ + ":" + std::to_string(key_node.Mark().line + 1) + ": key '" + key + "': ";
  }
  static bool is_auto(const YAML::Node& v) { return v.IsScalar() && v.Scalar() == "auto"; }
  const YAML::Node& require_map(const YAML::Node& v, const std::string& prefix) const;
  void set_key(const std::string& zerotrain_path, const YAML::Node& v, const std::string& prefix);
  bool read_enabled(const YAML::Node& v, const std::string& prefix, bool auto_value) const;
  void read_batch_key(BatchKey& key, const YAML::Node& v, const std::string& prefix) const;

  void import_zero(const YAML::Node& block);
  void import_precision(const std::string& name, const YAML::Node& block,
                        const std::string& prefix);
  void import_data_types(const YAML::Node& block);
  void import_batch();
  void check_precision();

  const std::string& path_;
  int world_;
  Config& c_;
  std::vector<std::string>& warnings_;
  BatchKey train_batch_, micro_batch_, accumulation_;
  bool bf16_ = false, fp16_ = false;  // as DeepSpeed would run
  std::string fp16_prefix_, dtype_prefix_;
  DType grad_accum_dtype_ = DType::unset;
  bool optimizer_offload_to_cpu_ = false;
};

void DeepSpeedImporter::run() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) fail(path_ + ": cannot open DeepSpeed config: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    fail(path_ + ":" + std::to_string(e.mark.line + 1) + ": JSON syntax error: " + e.msg);
  }
  if (!root.IsMap())
    fail(path_ + ":1: expected a JSON object at the top level, got " + describe_node(root));

  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    const YAML::Node& v = entry.second;
    std::string where = prefix(entry.first, name);
    if (name == "zero_optimization") import_zero(require_map(v, where));
    else if (name == "train_batch_size") read_batch_key(train_batch_, v, where);
    else if (name == "train_micro_batch_size_per_gpu") read_batch_key(micro_batch_, v, where);
    else if (name == "gradient_accumulation_steps") read_batch_key(accumulation_, v, where);
    else if (name == "gradient_clipping") {
      if (!is_auto(v)) set_key("train.grad_clip", v, where);
    } else if (name == "bf16" || name == "bfloat16" || name == "fp16")
      import_precision(name, require_map(v, where), where);
    else if (name == "data_types") import_data_types(require_map(v, where));
    else warnings_.push_back(where + ignore_reason(name));
  }
  import_batch();
  if (!c_.zero.overlap_comm_set) c_.zero.overlap_comm = c_.zero.stage == 3;
  check_precision();
  validate_config(c_);
}

const YAML::Node& DeepSpeedImporter::require_map(const YAML::Node& v,
                                                 const std::string& prefix) const {
  if (!v.IsMap()) fail(prefix + "expected a JSON object, got " + describe_node(v));
  return v;
}

// Sets a zerotrain key through the config's own parser and range check.
void DeepSpeedImporter::set_key(const std::string& zerotrain_path, const YAML::Node& v,
                                const std::string& prefix) {
  size_t dot = zerotrain_path.find('.');
  const ConfigKey* key =
      find_config_key(zerotrain_path.substr(0, dot), zerotrain_path.substr(dot + 1));
  std::string problem = assign_from_yaml(*key, c_, v);
  if (problem.empty()) problem = check_range(*key, c_);
  if (!problem.empty()) fail(prefix + problem);
}

bool DeepSpeedImporter::read_enabled(const YAML::Node& v, const std::string& prefix,
                                     bool auto_value) const {
  if (is_auto(v)) return auto_value;
  bool enabled = false;
  if (!v.IsScalar() || !parse_bool(v.Scalar(), enabled))
    fail(prefix + "expected true, false or \"auto\", got " + describe_node(v));
  return enabled;
}

void DeepSpeedImporter::read_batch_key(BatchKey& key, const YAML::Node& v,
                                       const std::string& prefix) const {
  key.present = true;
  key.prefix = prefix;
  if (is_auto(v)) {
    key.automatic = true;
    return;
  }
  if (!v.IsScalar() || !parse_int64(v.Scalar(), key.value))
    fail(prefix + "expected an integer or \"auto\", got " + describe_node(v));
  if (key.value < 1 || key.value > INT_MAX)
    fail(prefix + "expected an integer in [1, 2147483647], got " + std::to_string(key.value));
}

// "auto" in zero_optimization: the HF Trainer's rules, with n_embd as hidden size.
void DeepSpeedImporter::import_zero(const YAML::Node& block) {
  const int64_t hidden = c_.model.n_embd;
  for (const auto& entry : block) {
    const std::string name = entry.first.Scalar();
    const YAML::Node& v = entry.second;
    std::string full_name = "zero_optimization." + name;
    std::string where = prefix(entry.first, full_name);
    auto honoured = honoured_zero_keys().find(name);
    if (honoured == honoured_zero_keys().end()) {
      if (name == "offload_optimizer" && v.IsMap() && v["device"] && v["device"].IsScalar())
        optimizer_offload_to_cpu_ = v["device"].Scalar() == "cpu";
      warnings_.push_back(where + ignore_reason(full_name));
      continue;
    }
    const std::string& target = honoured->second;
    if (is_auto(v)) {
      if (target == "reduce_bucket_size") c_.zero.reduce_bucket_size = hidden * hidden;
      else if (target == "stage3_prefetch_bucket_size")
        c_.zero.stage3_prefetch_bucket_size = int64_t(0.9 * double(hidden * hidden));
      else if (target == "stage3_param_persistence_threshold")
        c_.zero.stage3_param_persistence_threshold = 10 * hidden;
      else
        fail(where +
             "got \"auto\", which the HF Trainer resolves only for reduce_bucket_size, "
             "stage3_prefetch_bucket_size and stage3_param_persistence_threshold");
      continue;
    }
    set_key("zero." + target, v, where);
    if (target == "overlap_comm") c_.zero.overlap_comm_set = true;
  }
}

// bf16 / fp16 blocks: only "enabled" means anything to zerotrain. "auto" is
// zerotrain's own precision: bf16 (on the GPU), never fp16.
void DeepSpeedImporter::import_precision(const std::string& name, const YAML::Node& block,
                                         const std::string& prefix) {
  bool is_fp16 = name == "fp16";
  for (const auto& entry : block) {
    const std::string key = entry.first.Scalar();
    std::string where = this->prefix(entry.first, name + "." + key);
    if (key == "enabled") {
      bool enabled = read_enabled(entry.second, where, !is_fp16);
      (is_fp16 ? fp16_ : bf16_) = enabled;
      if (is_fp16) fp16_prefix_ = where;
    } else if (!is_fp16) {
      warnings_.push_back(where + ignore_reason(name + "." + key));
    }
  }
  if (is_fp16 && fp16_prefix_.empty()) fp16_prefix_ = prefix;
}

void DeepSpeedImporter::import_data_types(const YAML::Node& block) {
  for (const auto& entry : block) {
    const std::string key = entry.first.Scalar();
    std::string where = prefix(entry.first, "data_types." + key);
    if (key != "grad_accum_dtype") {
      warnings_.push_back(where + ignore_reason("data_types." + key));
      continue;
    }
    std::string text = entry.second.IsScalar() ? entry.second.Scalar() : "";
    // DeepSpeed's DtypeEnum spellings.
    if (text == "fp32" || text == "float32" || text == "float" || text == "torch.float32")
      grad_accum_dtype_ = DType::fp32;
    else if (text == "bf16" || text == "bfloat16" || text == "bfloat" || text == "torch.bfloat16")
      grad_accum_dtype_ = DType::bf16;
    else if (text == "fp16" || text == "float16" || text == "half" || text == "torch.float16")
      grad_accum_dtype_ = DType::fp16;
    else fail(where + "expected one of fp32, bf16, fp16, got " + describe_node(entry.second));
    dtype_prefix_ = where;
  }
}

// DeepSpeed's batch arithmetic: train_batch = micro * accumulation * world.
void DeepSpeedImporter::import_batch() {
  if (train_batch_.automatic) train_batch_.value = c_.train.global_batch_tokens / c_.model.seq_len;
  if (micro_batch_.automatic) micro_batch_.value = c_.train.micro_batch;
  if (accumulation_.automatic) accumulation_.value = grad_accum_steps(c_, world_);
  if (!train_batch_.present && !micro_batch_.present) {
    if (accumulation_.present)
      fail(accumulation_.prefix +
           "gradient_accumulation_steps alone does not fix the batch: "
           "expected train_batch_size or train_micro_batch_size_per_gpu as well");
    return;
  }
  // Each factor is below 2^31 (read_batch_key), so no product below overflows.
  const int64_t world = world_;
  int64_t& batch = train_batch_.value;
  int64_t& micro = micro_batch_.value;
  int64_t accumulation = accumulation_.present ? accumulation_.value : 1;
  auto text = [](int64_t a, int64_t b) { return std::to_string(a) + "*" + std::to_string(b); };
  if (train_batch_.present && micro_batch_.present) {
    int64_t step = accumulation_.present ? micro * accumulation * world : micro * world;
    std::string factors =
        accumulation_.present
            ? "train_micro_batch_size_per_gpu * gradient_accumulation_steps * world size = " +
                  text(micro, accumulation) + "*" + std::to_string(world)
            : "train_micro_batch_size_per_gpu * world size = " + text(micro, world);
    bool ok = accumulation_.present ? batch == step : batch % step == 0;
    if (!ok)
      fail(train_batch_.prefix + "expected " + (accumulation_.present ? "" : "a multiple of ") +
           factors + " = " + std::to_string(step) + ", got " + std::to_string(batch));
  } else if (train_batch_.present) {
    int64_t step = accumulation * world;
    if (batch % step != 0)
      fail(train_batch_.prefix + "expected a multiple of " +
           (accumulation_.present
                ? "gradient_accumulation_steps * world size = " + text(accumulation, world)
                : std::string("the world size")) +
           " = " + std::to_string(step) + ", got " + std::to_string(batch));
    micro = batch / step;
  } else {
    batch = micro * accumulation * world;
  }
  if (batch > INT64_MAX / c_.model.seq_len)
    fail((train_batch_.present ? train_batch_.prefix : micro_batch_.prefix) + "a batch of " +
         std::to_string(batch) + " sequences of " + std::to_string(c_.model.seq_len) +
         " tokens overflows the token count");
  c_.train.micro_batch = int(micro);
  c_.train.global_batch_tokens = batch * c_.model.seq_len;
}

void DeepSpeedImporter::check_precision() {
  if (fp16_ && bf16_)
    fail(fp16_prefix_ + "fp16 and bf16 are both enabled; DeepSpeed accepts only one");
  if (fp16_)
    warnings_.push_back(fp16_prefix_ +
                        "zerotrain has no fp16 mode (nor loss scaling): it trains in bf16 on the "
                        "GPU and fp32 on the CPU; the fp16 block is ignored");
  else if (!bf16_)
    warnings_.push_back(
        path_ +
        ": key 'bf16.enabled': not enabled, so DeepSpeed would train in fp32; zerotrain "
        "trains in bf16 on the GPU and fp32 on the CPU");
  if (grad_accum_dtype_ == DType::unset) return;
  if (bf16_ && grad_accum_dtype_ == DType::fp32 && c_.zero.stage == 1 && !optimizer_offload_to_cpu_)
    warnings_.push_back(
        dtype_prefix_ +
        "bf16 + ZeRO stage 1 + fp32 gradient accumulation: DeepSpeed runs this with its "
        "BF16_Optimizer, which takes none of the four stage-1/2 gradient paths; zerotrain runs "
        "the stage-1 path its zero switches select, so communication differs from that run");
  else
    warnings_.push_back(dtype_prefix_ +
                        "not honoured (zerotrain keeps gradients in its training precision: bf16 "
                        "on the GPU, fp32 on the CPU), ignored");
}

}  // namespace

void apply_deepspeed_config(const std::string& json_path, Config& c,
                            std::vector<std::string>& warnings, int world_size) {
  if (world_size < 1)
    fail("world size: expected an integer >= 1, got " + std::to_string(world_size));
  DeepSpeedImporter(json_path, world_size, c, warnings).run();
}

}  // namespace zt
