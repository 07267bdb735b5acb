// A config as plan and explain see it: loaded with its --set overrides, a
// ds_config imported over it when given (as `train --deepspeed` imports it),
// checked for the world size, and its configured step planned with the
// schedules a run executes. Both commands build on this one sequence.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "train/cli/cli_args.h"
#include "train/config/config.h"
#include "zero/analysis/plan.h"
#include "zero/grid/grid.h"

namespace zt {

struct PlannedConfig {
  Config cfg;
  std::vector<std::string> warnings;   // the ds_config importer's
  std::string ds_dtype;                // DeepSpeed's training dtype; "" without a ds_config
  int world = 1, per_node = 1, A = 1;  // ranks, ranks per node, micro-steps per step
  NodeMap nodes;
  // DeepSpeed's training dtype with a ds_config; else bf16 on cuda, fp32 on the CPU.
  DType model = DType::F32;
  // The grid (parallel.*); ZeRO's steps below are planned over its
  // data-parallel group, on rank 0's table: tensor shard 0 (every shard's
  // shapes) of pipeline stage 0.
  Grid grid;
  NodeMap data_nodes, tensor_nodes;  // rank 0's groups, placed as `nodes` says
  std::unique_ptr<ParamTable> table;
  ZeroSetup s;
  std::vector<PlannedCall> tensor_step;  // the tensor group's calls of one step
  // With parallel.pipeline > 1, per stage: its table (ZeRO's rows are stage
  // 0's), the activation slots its schedule holds, and its messages of one step.
  std::vector<std::unique_ptr<ParamTable>> stage_tables;
  std::vector<int> stage_slots;
  std::vector<std::vector<PlannedCall>> pipeline_step;
  StepPlan mine;  // the configured step
  // The same without ZeRO++'s quantization: what qwZ and qgZ save is told against it.
  StepPlan unquantized;
};

// `ds_path` "": no ds_config.
void plan_config(PlannedConfig& out, const std::string& config_path,
                 const std::vector<std::string>& overrides, const std::string& ds_path,
                 const WorldLayout& layout);

}  // namespace zt
