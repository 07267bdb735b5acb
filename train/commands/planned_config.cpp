#include "train/commands/planned_config.h"

#include "train/config/zero_setup.h"
#include "train/deepspeed/deepspeed_import.h"

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
  out.table.reset(new ParamTable(out.cfg.model));
  out.s = zero_setup(out.cfg, *out.table, out.nodes.ranks_per_node());
  out.mine = plan_step(out.s, *out.table, out.world, out.A, out.model, out.nodes);
  ZeroSetup unquantized = out.s;
  unquantized.z.zero_quantized_weights = unquantized.z.zero_quantized_gradients = false;
  out.unquantized = plan_step(unquantized, *out.table, out.world, out.A, out.model, out.nodes);
}

}  // namespace zt
