// The ZeRO paper's model-state bytes per rank, per stage: parameters p and
// gradients g bytes per element, K = 12 bytes of fp32 optimizer state (master,
// Adam m and v), on n elements (the stage's layout, padding included) over W
// ranks. Stage 3 adds its persistent tensors' whole copies separately.
// With offload (zero.offload_optimizer, zero.offload_param), the same states
// by where they live: device memory, host memory, NVMe files.
#pragma once
#include <cstdint>

#include "model/ops.h"
#include "zero/zero_config.h"

namespace zt {

uint64_t model_states_bytes(int stage, uint64_t n, int W, int p, int g);

struct StateBytes {
  uint64_t params = 0, grads = 0, optimizer = 0;
  uint64_t total() const { return params + grads + optimizer; }
};
struct ModelStatesPlacement {
  StateBytes device, host, nvme;
};
// Per rank, for z.stage on n padded elements over W ranks in the model dtype
// (over MiCS's shard group of S ranks where zero.mics_shard_size sets one);
// persistent: stage 3's whole-tensor bytes (always on the device). The host
// part counts the offloaded optimizer's staging and chunk buffers too
// (plan_optimizer_offload), so it is what a run allocates.
ModelStatesPlacement model_states_placement(const ZeroConfig& z, uint64_t n, int W, DType model,
                                            uint64_t persistent);

}  // namespace zt
