// The CPU reference of DeviceServices::quantize_blocks / dequantize_blocks
// (model/device_services.h), over fp32 values; the backend converts other dtypes around it. One
// thread, fixed order: the CUDA kernels reproduce these codes and scales exactly (the same fp32
// division and rint).
#pragma once
#include <cstddef>
#include <cstdint>

namespace zt::cpu {

inline int quant_max(int bits) { return bits == 8 ? 127 : 7; }

// One block: its scale, and its codes into q (8 bits: q[i]; 4 bits: nibbles).
void quantize_block(uint8_t* q, float* scale, const float* x, size_t n, int bits);
// The value of element i of a quantized buffer.
float dequantize_element(const uint8_t* q, float scale, size_t i, int bits);

}  // namespace zt::cpu
