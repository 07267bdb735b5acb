// bf16 and fp16 <-> fp32 on the host (round to nearest even), for staging
// collectives, checkpoints and model files.
#pragma once
#include <cstdint>
#include <cstring>

namespace zt {

inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);  // inf, NaN
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      e++;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    u = sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_fp16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs >= 0x38800000u) {                                              // normal half
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
  // Subnormal half: shift the mantissa (with its implicit bit) into place, round to even.
  const uint32_t man = (abs & 0x7fffffu) | 0x800000u;
  const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
  const uint32_t half_ulp = 1u << (shift - 1);
  uint32_t q = man >> shift;
  const uint32_t rem = man & ((1u << shift) - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q++;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace zt
