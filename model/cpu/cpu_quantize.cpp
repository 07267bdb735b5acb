#include "model/cpu/cpu_quantize.h"

#include <cmath>

namespace zt::cpu {

void quantize_block(uint8_t* q, float* scale, const float* x, size_t n, int bits) {
  const int qmax = quant_max(bits);
  float amax = 0;
  for (size_t i = 0; i < n; i++) amax = std::fmax(amax, std::fabs(x[i]));
  const float s = amax / static_cast<float>(qmax);
  *scale = s;
  for (size_t i = 0; i < n; i++) {
    int code = 0;
    if (s > 0) {
      const float r = std::rint(x[i] / s);
      code = static_cast<int>(std::fmin(std::fmax(r, -float(qmax)), float(qmax)));
    }
    if (bits == 8) {
      q[i] = static_cast<uint8_t>(static_cast<int8_t>(code));
    } else {
      const uint8_t nibble = static_cast<uint8_t>(code & 0xF);
      uint8_t& byte = q[i / 2];
      byte = (i % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | nibble)
                          : static_cast<uint8_t>((byte & 0x0F) | (nibble << 4));
    }
  }
}

float dequantize_element(const uint8_t* q, float scale, size_t i, int bits) {
  int code;
  if (bits == 8) {
    code = static_cast<int8_t>(q[i]);
  } else {
    const int nibble = (i % 2 == 0) ? (q[i / 2] & 0xF) : (q[i / 2] >> 4);
    code = nibble >= 8 ? nibble - 16 : nibble;
  }
  return static_cast<float>(code) * scale;
}

}  // namespace zt::cpu
