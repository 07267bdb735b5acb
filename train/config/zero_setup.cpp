#include "train/config/zero_setup.h"

#include "model/gpt.h"
#include "zero/layout/mics_groups.h"
#include "zero/optim/offload_store.h"

namespace zt {

ZeroSetup zero_setup(const Config& cfg, const ParamTable& table, int ranks_per_node) {
  ZeroSetup s;
  s.ranks_per_node = ranks_per_node;
  s.z = cfg.zero;
  s.groups = make_param_groups(table, cfg.train.param_groups);
  s.events = GPT::training_events(table, recompute_level(cfg));
  s.grad_clip = cfg.train.grad_clip;
  const std::string placement = mics_placement_problem(s.z, ranks_per_node);
  if (!placement.empty())
    throw ConfigError(cfg.source + ": key 'zero.mics_hierarchical_params_gather': " + placement);
  return s;
}

Grid parallel_grid(const Config& cfg, int world_size) {
  Grid g;
  g.tensor = cfg.parallel.tensor;
  g.pipeline = cfg.parallel.pipeline;
  g.data = data_parallel_size(cfg, world_size);
  g.order = cfg.parallel.rank_order == "tensor-inner" ? RankOrder::TensorInnermost
                                                      : RankOrder::DataInnermost;
  return g;
}

void check_offload_paths(const ZeroConfig& z) {
  const std::pair<const char*, const OffloadConfig*> blocks[] = {
      {"zero.offload_optimizer", &z.offload_optimizer}, {"zero.offload_param", &z.offload_param}};
  for (const auto& b : blocks) {
    if (b.second->device != "nvme") continue;
    const std::string problem = nvme_path_problem(b.second->nvme_path);
    if (!problem.empty()) throw ConfigError(std::string(b.first) + ".nvme_path: " + problem);
  }
}

}  // namespace zt
