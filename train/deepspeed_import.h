// Import of a DeepSpeed JSON config (as passed to deepspeed.initialize or the
// HF Trainer's --deepspeed) into a loaded zerotrain Config, so that a DeepSpeed
// user can run the same ZeRO switches and batch sizes here.
//
// Honoured: zero_optimization's stage, reduce_bucket_size, allgather_bucket_size,
// reduce_scatter, use_multi_rank_bucket_allreduce, contiguous_gradients,
// overlap_comm and the four stage3_* knobs (also under their pydantic field
// names prefetch_bucket_size, param_persistence_threshold, max_live_parameters,
// max_reuse_distance); train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps; gradient_clipping; bf16/fp16 "enabled" (checked,
// see below). Everything else gives one warning naming the key.
//
// Batch sizes, in DeepSpeed's sequences, become zerotrain's tokens:
//   train.micro_batch         = train_micro_batch_size_per_gpu
//   train.global_batch_tokens = train_batch_size * model.seq_len
// where train_batch_size = micro * accumulation * world_size. As in DeepSpeed,
// any two of the three determine the third, train_batch_size alone means no
// accumulation (micro = train_batch_size / world_size), micro alone means
// train_batch_size = micro * world_size, and gradient_accumulation_steps
// alone is an error.
//
// "auto" is resolved as the HF Trainer does, with zerotrain's config standing
// in for the Trainer's arguments: reduce_bucket_size = n_embd^2,
// stage3_prefetch_bucket_size = 0.9 * n_embd^2, stage3_param_persistence_threshold
// = 10 * n_embd, batch sizes and gradient_clipping keep zerotrain's values,
// bf16/fp16 "enabled" mean zerotrain's own precision. "auto" elsewhere is an
// error, as it would be for DeepSpeed.
//
// Precision: zerotrain trains in bf16 on the GPU and fp32 on the CPU, whatever
// the JSON says; fp16.enabled and bf16.enabled = false give warnings. When
// DeepSpeed would route the run to its BF16_Optimizer (bf16, stage 1,
// data_types.grad_accum_dtype fp32, no optimizer offload), none of the
// stage-1/2 gradient paths applies there, and a warning says so.
//
// Numbers may be JSON numbers, scientific notation (5e8) or strings ("5e8").
// Bad JSON, a wrong type, an out-of-range value or inconsistent batch sizes
// throw ConfigError with one line: "FILE:LINE: key 'zero_optimization.stage': ...".
#pragma once
#include <string>
#include <vector>

#include "train/config.h"

namespace zt {

// Applies the JSON file to `c` (which holds the model shape that "auto" needs)
// for a run on `world_size` ranks; appends one line per ignored or
// approximated key to `warnings`. Leaves model, data and system untouched.
void apply_deepspeed_config(const std::string& json_path, Config& c,
                            std::vector<std::string>& warnings, int world_size);

}  // namespace zt
