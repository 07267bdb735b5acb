// Where a stage-3 coalesced all-gather takes its pieces from, and over which ranks.
#pragma once

namespace zt {

enum class GatherFrom {
  // The primary partition over the shard group (the world without MiCS); with
  // mics_hierarchical_params_gather, across the nodes and then inside the node.
  Primary,
  // hpZ: the secondary pieces over the rank's hpZ group.
  Secondary,
  // The step's refresh of a persistent tensor: the primary partition in one
  // flat call (DeepSpeed's _allgather_params_coalesced, which MiCS leaves flat).
  Persistent,
};

// qwZ (zero_quantized_weights) quantizes the fetches but not the step's
// refresh: DeepSpeed 0.14.4's _post_step calls all_gather, whose
// _all_gather quantizes only tensors stored quantized (ds_quant_scale, set by
// zero_quantized_nontrainable_weights), while the coordinator's fetches pass
// quantize=zero_quantized_weights. Traced: tests/reference/deepspeed s3_qwz.
inline bool qwz_quantizes(GatherFrom from) { return from != GatherFrom::Persistent; }

}  // namespace zt
