#include "zero/comm/quantized_blocks.h"

namespace zt {

size_t qwz_block_size(size_t n) {
  constexpr size_t kTarget = 8000;  // CUDAQuantizer.target_group_size
  if (n == 0) return 1;
  size_t groups = (n + kTarget - 1) / kTarget;
  if (n % 8 != 0) return (n + groups - 1) / groups;
  while (groups < n && n % (8 * groups) != 0) groups++;
  while (n % (16 * groups) == 0 && n / groups > kTarget) groups *= 2;
  return n / groups;
}

QuantizedGatherShape qwz_shape(size_t count) {
  QuantizedGatherShape s;
  s.count = count;
  s.block = qwz_block_size(count);
  s.blocks = count == 0 ? 0 : (count + s.block - 1) / s.block;
  return s;
}

}  // namespace zt
