// The ZeRO engine's setup from a run's config: the zero section, the optimizer
// parameter groups (train.param_groups), the model's hook events and the
// clipping threshold. Train, eval, plan and explain all build it here.
#pragma once
#include "model/param_table.h"
#include "train/config/config.h"
#include "zero/grid/grid.h"
#include "zero/stages/engine.h"

namespace zt {

// ranks_per_node: where the ranks sit (qgZ reduces inside a node, then across;
// MiCS's hierarchical gather needs its shard group to span nodes: ConfigError).
ZeroSetup zero_setup(const Config& cfg, const ParamTable& table, int ranks_per_node);
// The run's grid for a job of world_size ranks (parallel.*; validated).
Grid parallel_grid(const Config& cfg, int world_size);
// Before an engine is made (train, eval): each nvme offload's nvme_path must be
// a writable directory; otherwise ConfigError naming the key.
void check_offload_paths(const ZeroConfig& z);

}  // namespace zt
