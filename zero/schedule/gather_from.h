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

}  // namespace zt
