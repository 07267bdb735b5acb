#include "zero/analysis/memory_formula.h"

#include "zero/layout/mics_groups.h"
#include "zero/optim/offload_optimizer.h"

namespace zt {

uint64_t model_states_bytes(int stage, uint64_t n, int W, int p, int g) {
  const uint64_t K = 12;
  switch (stage) {
    case 0: return (p + g + K) * n;
    case 1: return (p + g) * n + K * n / W;
    case 2: return p * n + (g + K) * n / W;
    default: return (p + g + K) * n / W;
  }
}

ModelStatesPlacement model_states_placement(const ZeroConfig& z, uint64_t n, int W, DType model,
                                            uint64_t persistent) {
  const uint64_t es = dtype_size(model);
  const uint64_t shard = z.stage == 0 ? n : n / shard_ranks(z, W);
  ModelStatesPlacement p;
  const OptimizerOffloadPlan opt = plan_optimizer_offload(z, shard, model);
  p.device.optimizer = opt.device_bytes;
  p.host.optimizer = opt.host_bytes();
  p.nvme.optimizer = opt.nvme_bytes;
  p.device.grads = es * (z.stage >= 2 ? shard : n);
  if (z.stage < 3) {
    p.device.params = es * n;
    return p;
  }
  p.device.params = persistent;
  const std::string& where = z.offload_param.device;
  if (where == "cpu") p.host.params = es * shard;
  else if (where == "nvme") p.nvme.params = es * shard;
  else p.device.params += es * shard;
  return p;
}

}  // namespace zt
