// ZeRO switches, named and defaulted as DeepSpeed's zero_optimization block
// (deepspeed/runtime/zero/config.py), plus zerotrain's own additions.
#pragma once
#include <cstdint>
#include <string>

#include "zero/deepspeed_release.h"

namespace zt {

// The release a config gets when it names none (deepspeed_behaviours.cpp says
// which and why).
DeepSpeedRelease default_deepspeed_release();

// DeepSpeed's offload_optimizer / offload_param blocks (offload_config.py).
struct OffloadConfig {
  std::string device = "none";  // none | cpu | nvme
  std::string nvme_path;        // a directory, with device nvme
  bool pin_memory = false;      // page-locked host buffers (GPU runs)
  int64_t buffer_count = 4;  // I/O buffers in flight (nvme): DeepSpeed's 4 (optimizer), 5 (param)
  bool enabled() const { return device != "none"; }
};

struct ZeroConfig {
  // The DeepSpeed release whose behaviour set the schedule follows
  // (zero/schedule/deepspeed_behaviours.h turns it into named behaviours).
  DeepSpeedRelease deepspeed_version = default_deepspeed_release();
  int stage = 0;
  int64_t reduce_bucket_size = 500000000;     // elements
  int64_t allgather_bucket_size = 500000000;  // elements
  bool reduce_scatter = true;
  bool use_multi_rank_bucket_allreduce = true;
  bool contiguous_gradients = true;
  bool overlap_comm = false;      // DeepSpeed: false for stages 1/2, true for stage 3 when unset
  bool overlap_comm_set = false;  // whether the config set overlap_comm explicitly
  int64_t stage3_prefetch_bucket_size = 50000000;
  int64_t stage3_param_persistence_threshold = 100000;
  int64_t stage3_max_live_parameters = 1000000000;
  int64_t stage3_max_reuse_distance = 1000000000;
  // Persistent tensors stop once their total would exceed this (DeepSpeed's
  // stage3_model_persistence_threshold, default sys.maxsize).
  int64_t stage3_model_persistence_threshold = INT64_MAX;
  // Stage 3 steps (and takes one float64 norm) per sub-group of this many
  // partitioned elements (DeepSpeed's sub_group_size).
  int64_t sub_group_size = 1000000000;
  // Gradient dtype on the wire: "auto" (the model dtype), "fp32", "bf16" or "fp16".
  std::string communication_data_type = "auto";
  bool round_robin_gradients = false;  // stages 1/2: reorder tensors across owners
  // DeepSpeed's bf16.check_grad_overflow (from 0.17.1): "auto" (the release's
  // default: off before 0.19.3, on from it), "true" or "false". Read by
  // DeepSpeedBehaviours::overflow_check; DeepSpeed honours it at stages 1/2.
  std::string bf16_check_grad_overflow = "auto";
  // ZeRO++ (stage 3): hpZ's secondary partition over groups of this many
  // consecutive ranks (1: off), qwZ's int8 parameter gathers, qgZ's int4
  // hierarchical all-to-all gradient reduction.
  int zero_hpz_partition_size = 1;
  bool zero_quantized_weights = false;
  bool zero_quantized_gradients = false;
  // MiCS (stage 3): parameters, gradients and optimizer state sharded over
  // groups of this many consecutive ranks and replicated across the W / S
  // groups (-1: off, DeepSpeed's default); hierarchical: each parameter
  // all-gather runs across the nodes of the shard group, then inside the node.
  int mics_shard_size = -1;
  bool mics_hierarchical_params_gather = false;
  OffloadConfig offload_optimizer;
  OffloadConfig offload_param{"none", "", false, 5};
  // zerotrain's own:
  bool native_reduce_scatter = false;  // stages 1/2: one true reduce-scatter per bucket
  bool allgather_bucketed =
      false;  // old DeepSpeed: param all-gather chunked by allgather_bucket_size
  // Stage 3: gather each top-level module whole (each transformer block in one
  // call) instead of each submodule, as DeepSpeed does.
  bool stage3_block_gathers = false;
};

// DeepSpeed's default overlap_comm, applied unless the config set it: on for
// stage 3 only (runtime/zero/config.py). The one place that rule lives.
inline void resolve_overlap_default(ZeroConfig& z) {
  if (!z.overlap_comm_set) z.overlap_comm = z.stage == 3;
}

}  // namespace zt
