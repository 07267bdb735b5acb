// The ZeRO paper's model-state bytes per rank, per stage: parameters p and
// gradients g bytes per element, K = 12 bytes of fp32 optimizer state (master,
// Adam m and v), on n elements (the stage's layout, padding included) over W
// ranks. Stage 3 adds its persistent tensors' whole copies separately.
#pragma once
#include <cstdint>

namespace zt {

uint64_t model_states_bytes(int stage, uint64_t n, int W, int p, int g);

}  // namespace zt
