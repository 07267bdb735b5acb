// Block sizes of ZeRO++'s quantized collectives, as DeepSpeed 0.14.4 picks
// them, and the int8 parameter all-gather (qwZ) built on DeviceServices::quantize_blocks.
#pragma once
#include <cstddef>
#include <vector>

#include "zero/comm/communicator.h"

namespace zt {

// qwZ: DeepSpeed's CUDAQuantizer.quantize on n elements: groups start at
// ceil(n / 8000) and grow until 8 * groups divides n, then double while
// 16 * groups divides n and the groups stay above 8000 elements; the block is
// n / groups. DeepSpeed asserts when n is not a multiple of 8; zerotrain then
// uses ceil(n / 8000) blocks of ceil(n / groups) (the last one shorter).
size_t qwz_block_size(size_t n);

// One quantized all-gather's calls: the int8 codes (count elements each
// rank) and the fp32 scales (one per block), in DeepSpeed's order.
struct QuantizedGatherShape {
  size_t count = 0;   // elements each rank sends
  size_t block = 0;   // elements per scale
  size_t blocks = 0;  // scales each rank sends
};
QuantizedGatherShape qwz_shape(size_t count);

}  // namespace zt
