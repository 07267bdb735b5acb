#include "train/zero_setup.h"

#include "model/gpt.h"

namespace zt {

ZeroSetup zero_setup(const Config& cfg, const ParamTable& table, int ranks_per_node) {
  ZeroSetup s;
  s.ranks_per_node = ranks_per_node;
  s.z = cfg.zero;
  s.groups = make_param_groups(table, cfg.train.param_groups);
  s.events = GPT::training_events(table, recompute_level(cfg));
  s.grad_clip = cfg.train.grad_clip;
  return s;
}

}  // namespace zt
