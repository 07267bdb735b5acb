#include "train/commands/planned_config.h"

#include "model/gpt.h"
#include "train/config/zero_setup.h"
#include "train/deepspeed/deepspeed_import.h"
#include "zero/analysis/pipeline_plan.h"
#include "zero/analysis/tensor_plan.h"

namespace zt {

void plan_config(PlannedConfig& out, const std::string& config_path,
                 const std::vector<std::string>& overrides, const std::string& ds_path,
                 const WorldLayout& layout) {
  out.world = layout.world;
  out.per_node = layout.ranks_per_node;
  out.nodes = NodeMap::uniform(out.world, out.per_node);
  out.cfg = load_config(config_path, overrides);
  if (!ds_path.empty()) {
    const DeepSpeedRelease release =
        out.cfg.zero.deepspeed_version;  // before the import resets zero
    apply_deepspeed_config(ds_path, out.cfg, out.warnings, out.world, &out.ds_dtype, release);
    validate_config(out.cfg);
  }
  validate_for_world(out.cfg, out.world);
  out.A = grad_accum_steps(out.cfg, out.world);
  out.model = !out.ds_dtype.empty()             ? deepspeed_train_dtype(out.ds_dtype)
              : out.cfg.system.device == "cuda" ? DType::BF16
                                                : DType::F32;
  out.grid = parallel_grid(out.cfg, out.world);
  out.data_nodes = out.nodes.of_members(out.grid.data_group().members_of(0));
  out.tensor_nodes = out.nodes.of_members(out.grid.tensor_group().members_of(0));
  const int L = out.cfg.model.n_layer, P = out.grid.pipeline;
  const TensorSplit split{out.grid.tensor, 0, out.cfg.parallel.sequence_parallel};
  out.table.reset(new ParamTable(out.cfg.model, split, stage_split(L, P, 0)));
  out.s = zero_setup(out.cfg, *out.table, out.data_nodes.ranks_per_node());
  if (P > 1)
    out.s.pipeline_actions =
        stage_actions(parse_pipeline_schedule(out.cfg.parallel.pipeline_schedule), P, 0, out.A);
  const int dp = out.grid.data;
  out.mine = plan_step(out.s, *out.table, dp, out.A, out.model, out.data_nodes);
  if (P > 1) {
    const PipelineSchedule schedule = parse_pipeline_schedule(out.cfg.parallel.pipeline_schedule);
    const size_t boundary =
        GPT::stage_boundary_elems(*out.table, out.cfg.train.micro_batch, out.cfg.model.seq_len);
    for (int stage = 0; stage < P; stage++) {
      out.stage_tables.emplace_back(new ParamTable(out.cfg.model, split, stage_split(L, P, stage)));
      const std::vector<PipeAction> actions = stage_actions(schedule, P, stage, out.A);
      out.stage_slots.push_back(peak_in_flight(actions));
      out.pipeline_step.push_back(plan_pipeline_calls(
          actions, stage, P, out.A, boundary, out.stage_tables.back()->params().front().numel,
          out.model, out.mine.overflow_check));
    }
  }
  ZeroSetup unquantized = out.s;
  unquantized.z.zero_quantized_weights = unquantized.z.zero_quantized_gradients = false;
  out.unquantized = plan_step(unquantized, *out.table, dp, out.A, out.model, out.data_nodes);
  if (out.grid.tensor > 1)
    out.tensor_step = plan_tensor_calls(
        GPT::combine_points(*out.table, recompute_level(out.cfg)), *out.table, out.A,
        static_cast<size_t>(out.cfg.train.micro_batch) * out.cfg.model.seq_len, out.model,
        out.mine.overflow_check);
}

}  // namespace zt
