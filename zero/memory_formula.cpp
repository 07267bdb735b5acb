#include "zero/memory_formula.h"

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

}  // namespace zt
