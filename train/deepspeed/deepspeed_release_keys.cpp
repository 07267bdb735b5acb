// The per-release key table (see deepspeed_release_keys.h for where it was read from).
#include "train/deepspeed/deepspeed_release_keys.h"

#include <optional>
#include <string>

namespace zt {
namespace {

constexpr DeepSpeedRelease kEvery = kOldestReleaseRead;  // present in every release read
// AutoTP training's block (runtime/tensor_parallel/config.py), first in DeepSpeed's v0.16.4 tag.
constexpr DeepSpeedRelease kTensorParallelAdded{0, 16, 4};

struct DefaultSince {
  DeepSpeedRelease since;
  const char* value;
};

struct KeyRange {
  const char* key;  // dotted, as spelled in the ds_config (field names and aliases both)
  DeepSpeedRelease added;
  std::optional<DeepSpeedRelease> removed;  // the first release without it
  // The default from each release on, where a release changed it (empty: unchanged).
  std::vector<DefaultSince> defaults = {};
  // A release without the key ignores it (a plain dict, or an unknown top-level key) instead of
  // refusing it (a pydantic model forbidding extra fields).
  bool ignored_where_absent = false;
};

// zero_optimization.* (DeepSpeedZeroConfig's fields and aliases).
const std::vector<KeyRange>& zero_keys() {
  static const std::vector<KeyRange> keys = {
      {"stage", kEvery, {}},
      {"allgather_partitions", kEvery, {}},
      {"allgather_bucket_size", kEvery, {}},
      {"reduce_scatter", kEvery, {}},
      {"reduce_bucket_size", kEvery, {}},
      {"contiguous_gradients", kEvery, {}},
      {"overlap_comm", kEvery, {}},
      {"offload_param", kEvery, {}},
      {"offload_optimizer", kEvery, {}},
      {"cpu_offload", kEvery, {}},
      {"cpu_offload_param", kEvery, {}},
      {"cpu_offload_use_pin_memory", kEvery, {}},
      {"sub_group_size", kEvery, {}},
      {"elastic_checkpoint", kEvery, {}},
      {"load_from_fp32_weights", kEvery, {}},
      {"ignore_unused_parameters", kEvery, {}},
      {"legacy_stage1", kEvery, {}},
      {"round_robin_gradients", kEvery, {}},
      {"stage3_gather_fp16_weights_on_model_save", kEvery, {}},
      {"prefetch_bucket_size", kEvery, {}},
      {"stage3_prefetch_bucket_size", kEvery, {}},
      {"param_persistence_threshold", kEvery, {}},
      {"stage3_param_persistence_threshold", kEvery, {}},
      {"model_persistence_threshold", kEvery, {}},
      {"stage3_model_persistence_threshold", kEvery, {}},
      {"max_live_parameters", kEvery, {}},
      {"stage3_max_live_parameters", kEvery, {}},
      {"max_reuse_distance", kEvery, {}},
      {"stage3_max_reuse_distance", kEvery, {}},
      {"gather_16bit_weights_on_model_save", kEvery, {}},
      {"stage3_gather_16bit_weights_on_model_save", kEvery, {}},
      {"memory_efficient_linear", {0, 9, 0}, {}},
      {"mics_shard_size", {0, 9, 2}, DeepSpeedRelease{0, 19, 7}},
      {"mics_hierarchical_params_gather", {0, 9, 2}, DeepSpeedRelease{0, 19, 7}},
      {"zero_hpz_partition_size", {0, 10, 0}, {}},
      {"zero_quantized_weights", {0, 10, 0}, {}},
      {"zero_quantized_gradients", {0, 10, 0}, {}},
      {"override_module_apply", {0, 10, 1}, {}},
      {"pipeline_loading_checkpoint", {0, 10, 1}, {}},
      {"zero_quantized_nontrainable_weights", {0, 10, 2}, {}},
      {"use_multi_rank_bucket_allreduce", {0, 12, 4}, {}},
      {"use_all_reduce_for_fetch_params", {0, 14, 3}, {}},
      {"stage3_use_all_reduce_for_fetch_params", {0, 14, 3}, {}},
      {"module_granularity_threshold", {0, 16, 0}, {}},
      {"stage3_module_granularity_threshold", {0, 16, 0}, {}},
      {"zeropp_loco_param", {0, 16, 2}, DeepSpeedRelease{0, 19, 8}},
      {"log_trace_cache_warnings", {0, 16, 4}, {}},
      {"zenflow", {0, 17, 5}, {}},
      {"enable_sanity_checks", {0, 17, 6}, {}},
      {"leaf_module", {0, 18, 0}, {}},
      {"allgather_sequential", {0, 18, 5}, {}},
      {"stage3_allgather_sequential", {0, 18, 5}, {}},
      {"save_muon_momentum_buffer_in_memory", {0, 18, 9}, {}},
      {"compute_grad_norm", {0, 19, 7}, {}},
      {"parameter_alignment", {0, 19, 7}, {}},
  };
  return keys;
}

// zero_optimization.offload_optimizer.* and offload_param.* (offload_config.py). pin_memory's
// default became true in 0.19.5 (DeepSpeed PR 8207: pinned offload buffers by default).
const std::vector<KeyRange>& offload_keys(bool optimizer) {
  static const std::vector<DefaultSince> pin = {{kEvery, "false"}, {{0, 19, 5}, "true"}};
  static const std::vector<KeyRange> shared = {
      {"device", kEvery, {}},
      {"nvme_path", kEvery, {}},
      {"buffer_count", kEvery, {}},
      {"pin_memory", kEvery, {}, pin},
  };
  static const std::vector<KeyRange> optimizer_keys = [] {
    std::vector<KeyRange> k = shared;
    k.push_back({"pipeline_read", kEvery, {}});
    k.push_back({"pipeline_write", kEvery, {}});
    k.push_back({"fast_init", kEvery, {}});
    k.push_back({"ratio", {0, 12, 3}, {}});
    k.push_back({"cpuadam_cores_perc", {0, 18, 0}, {}});
    k.push_back({"super_offload", {0, 18, 0}, {}});
    return k;
  }();
  static const std::vector<KeyRange> param_keys = [] {
    std::vector<KeyRange> k = shared;
    k.push_back({"buffer_size", kEvery, {}});
    k.push_back({"max_in_cpu", kEvery, {}});
    return k;
  }();
  return optimizer ? optimizer_keys : param_keys;
}

// Top-level keys: those the import reads, and those DeepSpeed removed and refuses by name
// (runtime/config.py's _REMOVED_TOP_LEVEL_CONFIG_KEYS). gradient_clipping's default became 1.0
// in 0.19.3 (DeepSpeed PR 8068).
const std::vector<KeyRange>& top_level_keys() {
  static const std::vector<KeyRange> keys = {
      {"train_batch_size", kEvery, {}},
      {"train_micro_batch_size_per_gpu", kEvery, {}},
      {"gradient_accumulation_steps", kEvery, {}},
      {"gradient_clipping", kEvery, {}, {{kEvery, "0"}, {{0, 19, 3}, "1.0"}}},
      {"communication_data_type", kEvery, {}},
      {"bf16", kEvery, {}},
      {"bfloat16", kEvery, {}},
      {"fp16", kEvery, {}},
      {"data_types", kEvery, {}},
      {"activation_checkpointing", kEvery, {}},
      {"pipeline", kEvery, {}},
      {"tensor_parallel", kTensorParallelAdded, {}, {}, true},
      {"optimizer", kEvery, {}},
      {"scheduler", kEvery, {}},
      {"zero_optimization", kEvery, {}},
      {"nebula", kEvery, DeepSpeedRelease{0, 19, 7}},
      {"compression_training", kEvery, DeepSpeedRelease{0, 19, 7}},
      {"quantize_training", kEvery, DeepSpeedRelease{0, 19, 7}},
      {"sparse_attention", kEvery, DeepSpeedRelease{0, 19, 7}},
      {"amp", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"sparse_gradients", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"eigenvalue", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"elasticity", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"graph_harvesting", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"curriculum_learning", kEvery, DeepSpeedRelease{0, 19, 8}},
      {"progressive_layer_drop", kEvery, DeepSpeedRelease{0, 19, 8}},
  };
  return keys;
}

// pipeline.* (runtime/config.py, get_pipeline_config: a plain dict of defaults the block
// overrides). Defaults, unchanged in every release read: stages "auto", partition "best",
// seed_layers false, activation_checkpoint_interval 0; pipe_partitioned and grad_partitioned true
// (0.12.3 added them; before it the PipelineEngine partitioned whenever the model was parallel).
const std::vector<KeyRange>& pipeline_keys() {
  static const std::vector<KeyRange> keys = {
      {"stages", kEvery, {}},
      {"partition", kEvery, {}},
      {"seed_layers", kEvery, {}},
      {"activation_checkpoint_interval", kEvery, {}},
      {"pipe_partitioned", {0, 12, 3}, {}, {}, true},
      {"grad_partitioned", {0, 12, 3}, {}, {}, true},
  };
  return keys;
}

// tensor_parallel.* (runtime/tensor_parallel/config.py, TPTrainingConfig, forbidding extra
// fields). Defaults, unchanged since: autotp_size 0 (AutoTP off), tp_overlap_comm false, dtype
// torch.float16, keep_module_on_host false, replace_with_kernel_inject false.
const std::vector<KeyRange>& tensor_parallel_keys() {
  static const std::vector<KeyRange> keys = {
      {"autotp_size", kTensorParallelAdded, {}},
      {"dtype", kTensorParallelAdded, {}},
      {"tp", kTensorParallelAdded, {}},
      {"tensor_parallel", kTensorParallelAdded, {}},
      {"injection_policy_tuple", kTensorParallelAdded, {}},
      {"keep_module_on_host", kTensorParallelAdded, {}},
      {"replace_with_kernel_inject", kTensorParallelAdded, {}},
      {"kernel_inject", kTensorParallelAdded, {}},
      {"tp_overlap_comm", {0, 16, 6}, {}},
      {"partition_config", {0, 18, 6}, {}},
      {"preset_model", {0, 18, 6}, {}},
  };
  return keys;
}

const KeyRange* find(const std::vector<KeyRange>& table, const std::string& key) {
  for (const KeyRange& k : table)
    if (key == k.key) return &k;
  return nullptr;
}

// The entry of k.defaults in force in `release` (the first one for a release before the table).
const DefaultSince& default_entry(const KeyRange& k, const DeepSpeedRelease& release) {
  const DefaultSince* entry = &k.defaults.front();
  for (const DefaultSince& d : k.defaults)
    if (d.since <= release) entry = &d;
  return *entry;
}

// Which of the object's keys this release lacks, and which defaults it takes differently.
void check_block(const JsonValue& block, const std::string& prefix,
                 const std::vector<KeyRange>& table, const DeepSpeedRelease& release,
                 std::vector<ReleaseKeyWarning>& out) {
  const std::string v = release.str();
  for (const JsonMember& m : block.members) {
    const KeyRange* k = find(table, m.key);
    if (!k) continue;  // the import refuses or warns about keys DeepSpeed never had
    const std::string key = prefix + m.key;
    if (release < k->added)
      out.push_back({m.line, key,
                     "not a key of DeepSpeed " + v + " (added in " + k->added.str() +
                         "); DeepSpeed " + v +
                         (k->ignored_where_absent ? " ignores it" : " refuses it")});
    else if (k->removed && *k->removed <= release)
      out.push_back({m.line, key,
                     "not a key of DeepSpeed " + v + " (removed in " + k->removed->str() +
                         "); DeepSpeed " + v + " refuses it"});
  }
  for (const KeyRange& k : table) {
    if (k.defaults.empty()) continue;
    const JsonValue* value = block.find(k.key);
    // "auto" takes the default only in DeepSpeed's pydantic sections (not at the top level).
    // null never does for these keys: pydantic refuses None for a bool field (pin_memory) and
    // the engine compares gradient_clipping with 0; the import refuses both.
    const bool left_default = !value || (!prefix.empty() && value->is_string("auto"));
    const DefaultSince& here = default_entry(k, release);
    if (!left_default || &here == &k.defaults.front()) continue;
    const DefaultSince& before = *(&here - 1);
    const std::string key = prefix + k.key;
    out.push_back({value ? value->line : block.line, key,
                   "left to its default, which in DeepSpeed " + v + " is " + here.value + " (" +
                       before.value + " before " + here.since.str() + "); zerotrain applies " +
                       here.value});
  }
}

}  // namespace

std::vector<ReleaseKeyWarning> warnings_for_release(const JsonValue& ds_config,
                                                    const DeepSpeedRelease& release) {
  std::vector<ReleaseKeyWarning> out;
  if (release < kOldestReleaseRead || kNewestReleaseRead < release) {
    out.push_back({ds_config.line, "",
                   "keys not checked against DeepSpeed " + release.str() +
                       ": the key table covers " + kOldestReleaseRead.str() + "-" +
                       kNewestReleaseRead.str()});
    return out;
  }
  check_block(ds_config, "", top_level_keys(), release, out);
  const JsonValue* pipeline = ds_config.find("pipeline");
  if (pipeline && pipeline->kind == JsonValue::Kind::object)
    check_block(*pipeline, "pipeline.", pipeline_keys(), release, out);
  // A release without the block ignores it whole: one warning, for the block.
  const JsonValue* tensor = ds_config.find("tensor_parallel");
  if (tensor && tensor->kind == JsonValue::Kind::object && !(release < kTensorParallelAdded))
    check_block(*tensor, "tensor_parallel.", tensor_parallel_keys(), release, out);
  const JsonValue* zero = ds_config.find("zero_optimization");
  if (!zero || zero->kind != JsonValue::Kind::object) return out;
  check_block(*zero, "zero_optimization.", zero_keys(), release, out);
  for (const char* name : {"offload_optimizer", "offload_param"}) {
    const JsonValue* offload = zero->find(name);
    if (offload && offload->kind == JsonValue::Kind::object)
      check_block(*offload, std::string("zero_optimization.") + name + ".",
                  offload_keys(std::string(name) == "offload_optimizer"), release, out);
  }
  return out;
}

double gradient_clipping_default(const DeepSpeedRelease& release) {
  return std::stod(default_entry(*find(top_level_keys(), "gradient_clipping"), release).value);
}

bool offload_pin_memory_default(const DeepSpeedRelease& release) {
  return std::string(default_entry(*find(offload_keys(true), "pin_memory"), release).value) ==
         "true";
}

bool deepspeed_precision_auto_is_on(const DeepSpeedRelease& release) {
  return release < DeepSpeedRelease{0, 17, 1};
}

}  // namespace zt
