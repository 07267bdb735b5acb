// DeepSpeed's "zero_optimization" block: the keys zerotrain honours mapped onto zero.*, every
// other key DeepSpeed knows warned about with the reason, unknown keys refused as DeepSpeed
// refuses them, and the HF Trainer's "auto" fill-ins.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train/config/config_schema.h"
#include "train/deepspeed/deepspeed_import_context.h"
#include "train/deepspeed/deepspeed_release_keys.h"

namespace zt {
namespace {

enum class ZeroType { stage, flag, count };

// zero_optimization keys zerotrain honours: DeepSpeed's JSON name or pydantic field name ->
// (the zero.* key of the same meaning, its type).
const std::map<std::string, std::pair<std::string, ZeroType>>& honoured_zero_keys() {
  static const std::map<std::string, std::pair<std::string, ZeroType>> keys = {
      {"stage", {"stage", ZeroType::stage}},
      {"reduce_bucket_size", {"reduce_bucket_size", ZeroType::count}},
      {"allgather_bucket_size", {"allgather_bucket_size", ZeroType::count}},
      {"reduce_scatter", {"reduce_scatter", ZeroType::flag}},
      {"use_multi_rank_bucket_allreduce", {"use_multi_rank_bucket_allreduce", ZeroType::flag}},
      {"contiguous_gradients", {"contiguous_gradients", ZeroType::flag}},
      {"overlap_comm", {"overlap_comm", ZeroType::flag}},
      {"round_robin_gradients", {"round_robin_gradients", ZeroType::flag}},
      {"stage3_prefetch_bucket_size", {"stage3_prefetch_bucket_size", ZeroType::count}},
      {"prefetch_bucket_size", {"stage3_prefetch_bucket_size", ZeroType::count}},
      {"stage3_param_persistence_threshold",
       {"stage3_param_persistence_threshold", ZeroType::count}},
      {"param_persistence_threshold", {"stage3_param_persistence_threshold", ZeroType::count}},
      {"stage3_max_live_parameters", {"stage3_max_live_parameters", ZeroType::count}},
      {"max_live_parameters", {"stage3_max_live_parameters", ZeroType::count}},
      {"stage3_max_reuse_distance", {"stage3_max_reuse_distance", ZeroType::count}},
      {"max_reuse_distance", {"stage3_max_reuse_distance", ZeroType::count}},
      {"zero_hpz_partition_size", {"zero_hpz_partition_size", ZeroType::count}},
      {"zero_quantized_weights", {"zero_quantized_weights", ZeroType::flag}},
      {"zero_quantized_gradients", {"zero_quantized_gradients", ZeroType::flag}},
      {"mics_shard_size", {"mics_shard_size", ZeroType::count}},
      {"mics_hierarchical_params_gather", {"mics_hierarchical_params_gather", ZeroType::flag}},
  };
  return keys;
}

// Every other key DeepSpeed's DeepSpeedZeroConfig has had (0.8.3 to 0.19.8, field names and
// aliases; which release has which: train/deepspeed/deepspeed_release_keys.cpp), with the
// reason zerotrain ignores it where one helps. DeepSpeed refuses any key not here.
const std::map<std::string, std::string>& known_zero_keys() {
  static const std::map<std::string, std::string> keys = {
      {"allgather_partitions", ""},
      {"load_from_fp32_weights", ""},
      {"elastic_checkpoint", ""},
      {"zenflow", ""},
      {"sub_group_size", "zerotrain steps each rank's whole shard at once"},
      {"cpu_offload_param", "deprecated; write offload_param: {device: cpu}"},
      {"cpu_offload_use_pin_memory", "deprecated; write pin_memory inside offload_optimizer"},
      {"cpu_offload", ""},
      {"model_persistence_threshold", ""},
      {"stage3_model_persistence_threshold", ""},
      {"gather_16bit_weights_on_model_save", ""},
      {"stage3_gather_16bit_weights_on_model_save", ""},
      {"stage3_gather_fp16_weights_on_model_save", ""},
      {"module_granularity_threshold", ""},
      {"stage3_module_granularity_threshold", ""},
      {"use_all_reduce_for_fetch_params", ""},
      {"stage3_use_all_reduce_for_fetch_params", ""},
      {"allgather_sequential", ""},
      {"stage3_allgather_sequential", ""},
      {"ignore_unused_parameters", ""},
      {"legacy_stage1", ""},
      {"zero_quantized_nontrainable_weights", ""},
      {"zeropp_loco_param", ""},
      {"memory_efficient_linear", ""},
      {"pipeline_loading_checkpoint", ""},
      {"override_module_apply", ""},
      {"log_trace_cache_warnings", ""},
      {"enable_sanity_checks", ""},
      {"save_muon_momentum_buffer_in_memory", ""},
      {"leaf_module", ""},
      {"compute_grad_norm", ""},
      {"parameter_alignment", ""},
  };
  return keys;
}

// DeepSpeed's Optional[...] zero_optimization fields: null means "not set".
bool zero_key_takes_null(const std::string& key) {
  for (const char* k :
       {"overlap_comm", "offload_param", "offload_optimizer", "zenflow", "cpu_offload_param",
        "cpu_offload_use_pin_memory", "cpu_offload", "zeropp_loco_param"})
    if (key == k) return true;
  return false;
}

// Every zero_optimization key DeepSpeed knows, for "did you mean".
std::vector<std::string> zero_key_names() {
  std::vector<std::string> names;
  for (const auto& k : honoured_zero_keys()) names.push_back(k.first);
  for (const auto& k : known_zero_keys()) names.push_back(k.first);
  return names;
}

void set_zero(DsContext& ctx, const std::string& target, ZeroType type, const JsonValue& v,
              int line, const std::string& key) {
  ZeroConfig& z = ctx.c.zero;
  if (type == ZeroType::flag) {
    bool b = ctx.read_bool(v, line, key);
    if (target == "reduce_scatter") z.reduce_scatter = b;
    else if (target == "use_multi_rank_bucket_allreduce") z.use_multi_rank_bucket_allreduce = b;
    else if (target == "contiguous_gradients") z.contiguous_gradients = b;
    else if (target == "round_robin_gradients") z.round_robin_gradients = b;
    else if (target == "zero_quantized_weights") z.zero_quantized_weights = b;
    else if (target == "zero_quantized_gradients") z.zero_quantized_gradients = b;
    else if (target == "mics_hierarchical_params_gather") z.mics_hierarchical_params_gather = b;
    else z.overlap_comm = b, z.overlap_comm_set = true;
    return;
  }
  if (type == ZeroType::stage) {
    int64_t stage = ctx.read_int(v, line, key, 0);
    if (stage > 3) ctx.fail(line, key, "expected an integer in [0, 3], got " + v.text);
    z.stage = int(stage);
    return;
  }
  if (target == "mics_shard_size") {
    // DeepSpeed builds MiCS when the size is > 0 and plain stage 3 otherwise (-1 by default).
    const int64_t n = ctx.read_int(v, line, key, INT32_MIN);
    if (n > 1 << 20) ctx.fail(line, key, "expected an integer <= 1048576, got " + v.text);
    z.mics_shard_size = n > 0 ? int(n) : -1;
    return;
  }
  // Counts: DeepSpeed takes 0 (ge=0); zerotrain's buckets need at least one element.
  int64_t n = ctx.read_int(v, line, key, 0);
  if (target == "reduce_bucket_size" || target == "allgather_bucket_size") {
    if (n < 1) ctx.fail(line, key, "expected an integer >= 1 (zerotrain needs a bucket), got 0");
    (target == "reduce_bucket_size" ? z.reduce_bucket_size : z.allgather_bucket_size) = n;
  } else if (target == "stage3_prefetch_bucket_size") {
    z.stage3_prefetch_bucket_size = n;
  } else if (target == "stage3_param_persistence_threshold") {
    z.stage3_param_persistence_threshold = n;
  } else if (target == "zero_hpz_partition_size") {
    if (n < 1 || n > 1 << 20)
      ctx.fail(line, key, "expected an integer in [1, 1048576], got " + v.text);
    z.zero_hpz_partition_size = int(n);
  } else if (target == "stage3_max_live_parameters") {
    z.stage3_max_live_parameters = n;
  } else {
    z.stage3_max_reuse_distance = n;
  }
}

// offload_optimizer / offload_param: device, nvme_path, pin_memory, buffer_count
// honoured; DeepSpeed's other fields warned; unknown ones refused (extra="forbid").
void import_offload(DsContext& ctx, const JsonMember& m, OffloadConfig& o) {
  const std::string block = "zero_optimization." + m.key;
  const JsonValue& v = m.value[0];
  if (v.kind == JsonValue::Kind::null) return;
  ctx.require_object(v, m.line, block);
  o.pin_memory = offload_pin_memory_default(ctx.release);  // true from 0.19.5
  static const std::vector<std::string> ignored = {
      "buffer_size", "max_in_cpu", "pipeline",           "pipeline_read", "pipeline_write",
      "fast_init",   "ratio",      "cpuadam_cores_perc", "super_offload"};
  for (const JsonMember& f : v.members) {
    const std::string key = block + "." + f.key;
    const JsonValue& x = f.value[0];
    if (f.key == "device") {
      if (x.kind != JsonValue::Kind::string ||
          (x.text != "none" && x.text != "cpu" && x.text != "nvme"))
        ctx.fail(f.line, key, "expected one of none, cpu, nvme, got " + describe_json(x));
      o.device = x.text;
    } else if (f.key == "nvme_path") {
      if (x.kind == JsonValue::Kind::null) continue;
      if (x.kind != JsonValue::Kind::string || x.text.empty())
        ctx.fail(f.line, key, "expected a directory path, got " + describe_json(x));
      o.nvme_path = x.text;
    } else if (f.key == "pin_memory") {
      // DeepSpeed's config classes drop "auto": the release's default stays.
      if (x.is_string("auto")) ctx.pydantic_auto(f.line, key, ctx.c.zero.stage);
      else if (x.kind == JsonValue::Kind::null)
        // A plain bool field: DeepSpeed's pydantic model refuses None (run on 0.10.3, 0.14.4
        // and 0.19.8's DeepSpeedZeroOffloadOptimizerConfig), it does not take the default.
        ctx.fail(f.line, key,
                 "DeepSpeed refuses null here (a bool field, not optional); expected true or "
                 "false, or leave the key out for the release's default");
      else o.pin_memory = ctx.read_bool(x, f.line, key);
    } else if (f.key == "buffer_count") {
      o.buffer_count = ctx.read_int(x, f.line, key, 0);
      if (o.buffer_count < 1 || o.buffer_count > 1024)
        ctx.fail(f.line, key, "expected an integer in [1, 1024], got " + x.text);
    } else if (std::find(ignored.begin(), ignored.end(), f.key) != ignored.end()) {
      ctx.warn(f.line, key, "not honoured by zerotrain, ignored");
    } else {
      std::vector<std::string> names = ignored;
      for (const char* n : {"device", "nvme_path", "pin_memory", "buffer_count"})
        names.push_back(n);
      ctx.fail(
          f.line, key,
          "unknown key; DeepSpeed refuses keys it does not know here" + suggest_name(f.key, names));
    }
  }
  if (o.device == "nvme" && o.nvme_path.empty())
    ctx.fail(m.line, block, "device nvme needs nvme_path (DeepSpeed asserts it)");
}

}  // namespace

void import_zero_optimization(DsContext& ctx, const JsonMember& block, bool* offload_to_cpu) {
  const JsonValue& v = block.value[0];
  if (v.kind == JsonValue::Kind::boolean) {  // DeepSpeed's deprecated "zero_optimization": true
    ctx.c.zero.stage = v.text == "true" ? 1 : 0;
    ctx.warn(block.line, block.key,
             "the deprecated boolean form: stage " + std::to_string(ctx.c.zero.stage) +
                 ", as DeepSpeed reads it");
    return;
  }
  ctx.require_object(v, block.line, block.key);
  std::vector<const JsonMember*> autos;
  bool cpu_offload = false, offload_optimizer = false;
  for (const JsonMember& m : v.members) {
    const std::string key = "zero_optimization." + m.key;
    const JsonValue& value = m.value[0];
    if (m.key == "offload_optimizer" || m.key == "offload_param") {
      if (m.key == "offload_optimizer") offload_optimizer = true;
      OffloadConfig& o =
          m.key == "offload_optimizer" ? ctx.c.zero.offload_optimizer : ctx.c.zero.offload_param;
      import_offload(ctx, m, o);
      if (m.key == "offload_optimizer") *offload_to_cpu = *offload_to_cpu || o.enabled();
      continue;
    }
    auto honoured = honoured_zero_keys().find(m.key);
    if (honoured == honoured_zero_keys().end()) {
      auto known = known_zero_keys().find(m.key);
      if (known == known_zero_keys().end())
        ctx.fail(m.line, key,
                 "unknown key; DeepSpeed refuses keys it does not know here" +
                     suggest_name(m.key, zero_key_names()));
      if (m.key == "cpu_offload" && !value.is_string("auto") &&
          value.kind != JsonValue::Kind::null) {
        if (ctx.read_bool(value, m.line, key)) ctx.c.zero.offload_optimizer.device = "cpu";
        *offload_to_cpu = *offload_to_cpu || ctx.c.zero.offload_optimizer.enabled();
        cpu_offload = true;
        ctx.warn(m.line, key, "deprecated; read as offload_optimizer: {device: cpu}");
        continue;
      }
      const std::string& reason = known->second;
      ctx.warn(m.line, key,
               reason.empty() ? "not honoured by zerotrain, ignored"
                              : "not honoured (" + reason + "), ignored");
      continue;
    }
    const auto& [target, type] = honoured->second;
    if (value.is_string("auto")) {  // resolved once the stage is known
      autos.push_back(&m);
      continue;
    }
    if (value.kind == JsonValue::Kind::null) {
      if (!zero_key_takes_null(m.key))
        ctx.fail(m.line, key, "DeepSpeed refuses null here (not an optional field)");
      continue;  // overlap_comm: DeepSpeed's per-stage default
    }
    set_zero(ctx, target, type, value, m.line, key);
  }
  if (cpu_offload && offload_optimizer)
    ctx.fail(block.line, block.key,
             "cpu_offload (deprecated) and offload_optimizer are both set; DeepSpeed refuses "
             "the deprecated parameter together with the one replacing it");
  // "auto": the HF Trainer's value where it has a rule (train.deepspeed_auto: hf), else
  // DeepSpeed drops it and the key keeps its default.
  for (const JsonMember* m : autos) {
    const std::string key = "zero_optimization." + m->key;
    if (std::optional<HfAutoValue> v = ctx.pydantic_auto(m->line, key, ctx.c.zero.stage)) {
      const auto& [target, type] = honoured_zero_keys().at(m->key);
      JsonValue number;
      number.kind = JsonValue::Kind::number;
      number.text = std::to_string(int64_t(v->numbers[0]));
      set_zero(ctx, target, type, number, m->line, key);
    }
  }
}

}  // namespace zt
