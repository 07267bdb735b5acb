// Import of a DeepSpeed JSON config (as passed to deepspeed.initialize or the HF Trainer's
// --deepspeed) into a loaded zerotrain Config, so that a DeepSpeed user runs the same ZeRO
// switches, batch sizes, optimizer and schedule here. The rules, each tested on its own in
// tests/unit/test_deepspeed_import.cpp:
//
// The file is read as DeepSpeed reads it: Hjson (comments, trailing or missing commas, unquoted
// keys; data/json_reader.h), duplicate keys refused in any object.
//
// What the JSON governs starts from DeepSpeed's defaults, whatever the YAML or --set said:
// every zero.* key DeepSpeed has (zero_optimization absent: stage 0 and all defaults;
// zerotrain's own native_reduce_scatter and allgather_bucketed are kept; the offload blocks'
// pin_memory defaults as the release does: true from 0.19.5), train.grad_clip (DeepSpeed's
// gradient_clipping, default the release's: 0, 1.0 from 0.19.3), zero.communication_data_type
// (default: the model's dtype), and, when an optimizer block is present, its lr, betas, eps and
// weight_decay (the defaults of the optimizer DeepSpeed builds). Batch sizes: DeepSpeed's
// arithmetic (train_batch_size = micro * accumulation * world; any two fix the third;
// train_batch_size alone means no accumulation, micro alone means train_batch_size = micro * world;
// gradient_accumulation_steps alone is an error; none of them keeps zerotrain's batch). The
// schedule: a WarmupLR / WarmupDecayLR / WarmupCosineLR block sets train.lr_schedule and its
// keys exactly (train/loop/lr_schedule.h); no scheduler block with an optimizer block means
// DeepSpeed's constant lr; other schedulers are warned about and zerotrain's schedule stays.
//
// "auto" (train.deepspeed_auto). deepspeed, the default, reads it as DeepSpeed alone does:
// zero_optimization (and fp16/bf16 from DeepSpeed 0.17.1) are pydantic models that drop it and
// take their default; before 0.17.1 fp16/bf16 "enabled": "auto" is a truthy string, so on;
// everywhere else (batch sizes, gradient_clipping, optimizer and scheduler parameters)
// DeepSpeed fails on it, and so is it refused. hf resolves it as the HF Trainer does
// (train/deepspeed/hf_auto_values.h, the one place for those rules), zerotrain's config as
// loaded standing in for the Trainer's arguments and n_embd for the hidden size; an "auto"
// the Trainer has no rule for gets DeepSpeed's reading (its default in pydantic sections, with
// a warning; refused elsewhere). One line names the resolver and what each "auto" became.
//
// min_lr: a schedule the JSON sets (WarmupLR, WarmupDecayLR, WarmupCosineLR) takes its floor
// from the JSON; a schedule that stays zerotrain's (no scheduler block, or one zerotrain does
// not have) keeps train.min_lr unless it is above the JSON's lr, where it becomes that lr, with
// a note (DeepSpeed runs such configs: an lr of 3e-5 with no scheduler is common).
//
// Release keys: the file is checked against a DeepSpeed release's keys and defaults
// (train/deepspeed/deepspeed_release_keys.h), one warning per key that release lacks or per
// default it changed that the file relies on.
//
// null: accepted where DeepSpeed reads it as "not set" (Optional zero_optimization fields such
// as overlap_comm and offload_*, the batch sizes, communication_data_type); refused elsewhere.
// Booleans: true/false, 0/1 and pydantic's strings (yes/no, on/off, ...). zero_optimization's
// unknown keys are refused, as DeepSpeed refuses them; known ones zerotrain does not honour,
// and every other top-level key, give one warning each naming file, line and key, as does
// every fp16 sub-key. The deprecated cpu_offload (and zero_optimization: true) are read as
// DeepSpeed reads them. A batch-size mismatch names where each number came from.
//
// Precision: zerotrain trains in bf16 on the GPU and fp32 on the CPU, whatever the JSON says;
// fp16 and a bf16 left off are warned about. When DeepSpeed would route the run to its
// BF16_Optimizer (bf16, stage 1, data_types.grad_accum_dtype fp32, no optimizer offload), none
// of the stage-1/2 gradient paths applies there, and a warning says so.
//
// activation_checkpointing: what Megatron-DeepSpeed and the HF models do with it, checkpoint
// every layer, so train.recompute: block unless the zerotrain config names another level; its
// flags set true (partition_activations, cpu_checkpointing, ...) are warned about, one each.
//
// tensor_parallel and pipeline (train/deepspeed/deepspeed_grid_import.cpp): autotp_size becomes
// parallel.tensor and an integer pipeline.stages parallel.pipeline; what DeepSpeed takes from the
// training script instead, or zerotrain does differently, gets a line each. With a grid, the batch
// arithmetic counts the ranks DeepSpeed counts (the data-parallel ones, or every rank under
// AutoTP alone) and the global batch is the distinct sequences.
//
// Errors throw ConfigError with one line: "FILE:LINE: key 'zero_optimization.stage': ...".
#pragma once
#include <string>
#include <vector>

#include "model/ops.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_release_keys.h"

namespace zt {

// Applies the JSON file to `c` (which holds the model shape and train.deepspeed_auto) for a run
// on `world_size` ranks; appends one line per ignored or approximated key to `warnings`.
// Leaves model, data and system untouched. `deepspeed_dtype`, when given, receives the dtype
// DeepSpeed itself would train in ("bf16", "fp16" or "fp32"), for `explain`.
// `release`: the DeepSpeed release whose keys and reading of "auto" the file is checked against
// (train/deepspeed/deepspeed_release_keys.h): train and plan pass zero.deepspeed_version as the
// config held it before the import; the default is the release the import's defaults come from.
void apply_deepspeed_config(const std::string& json_path, Config& c,
                            std::vector<std::string>& warnings, int world_size,
                            std::string* deepspeed_dtype = nullptr,
                            DeepSpeedRelease release = kImportAssumedRelease);

// The DType of apply_deepspeed_config's `deepspeed_dtype` ("bf16", "fp16" or "fp32").
inline DType deepspeed_train_dtype(const std::string& name) {
  return name == "bf16" ? DType::BF16 : name == "fp16" ? DType::F16 : DType::F32;
}

}  // namespace zt
