// Blockwise quantization (DeviceServices::quantize_blocks / dequantize_blocks, ZeRO++'s
// qwZ and qgZ) of the CPU backend, against a float64 reference written here:
// per block scale = max|x| / qmax (the double quotient rounded once to fp32 is
// the correctly rounded fp32 quotient), codes in [-qmax, qmax] within half a
// scale step of x (plus the fp32 rounding of x / scale), the byte layout of
// both widths, dequantize (and accumulate) exactly as fp32 products and sums,
// and the Gaussian error against the uniform-rounding model. Inputs are fresh
// random numbers each run (the seed is printed; ZT_TEST_SEED replays it).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/device_services.h"
#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

std::string exact(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

int qmax_of(int bits) { return bits == 8 ? 127 : 7; }
size_t code_bytes(size_t n, int bits) { return bits == 8 ? n : n / 2; }

// Round to nearest even bf16 (finite inputs), as raw bits.
uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
// A double rounded to fp32 (nearest even), overflowing to +-inf as fp32
// arithmetic does (a plain cast of an out-of-range double is undefined).
float round_to_f32(double d) {
  const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);  // half-way to 2^128
  if (std::fabs(d) >= overflow) return d < 0 ? -INFINITY : INFINITY;
  return static_cast<float>(d);
}

// The value of finite IEEE binary16 bits.
float f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  const double mag = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
  return static_cast<float>((h & 0x8000) ? -mag : mag);
}

// An input buffer in its dtype and the fp32 values the quantizer must see.
struct Input {
  DType type = DType::F32;
  std::vector<float> values;
  std::vector<uint8_t> raw;
};

Input encode(DType type, const std::vector<float>& values) {
  Input in{type, values, {}};
  in.raw.resize(values.size() * dtype_size(type));
  REQUIRE((type == DType::F32 || type == DType::BF16));
  size_t inexact = 0;  // callers pass values of `type`
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::F32) {
      std::memcpy(&in.raw[i * 4], &values[i], 4);
    } else {
      const uint16_t b = bf16_bits(values[i]);
      inexact += bf16_value(b) != values[i];
      std::memcpy(&in.raw[i * 2], &b, 2);
    }
  }
  REQUIRE(inexact == 0);
  return in;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t salt) : gen(test_rng(salt)) {}
  size_t size(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(gen); }
  std::vector<float> gaussian(size_t n, double sigma) {
    std::normal_distribution<double> d(0, sigma);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(d(gen));
    return v;
  }
  // Values of `type` (F32: Gaussian with a per-call spread of magnitudes; BF16:
  // those rounded to bf16; F16: random finite binary16 bit patterns, subnormals
  // included).
  Input values(DType type, size_t n) {
    if (type == DType::F16) {
      Input in{type, std::vector<float>(n), std::vector<uint8_t>(2 * n)};
      std::uniform_int_distribution<int> bits(0, 0xFFFF);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        do h = static_cast<uint16_t>(bits(gen));
        while (((h >> 10) & 0x1F) == 0x1F);
        in.values[i] = f16_value(h);
        std::memcpy(&in.raw[2 * i], &h, 2);
      }
      return in;
    }
    std::vector<float> v = gaussian(n, std::ldexp(1.0, static_cast<int>(size(0, 40)) - 20));
    if (type == DType::BF16)
      for (float& x : v) x = bf16_value(bf16_bits(x));
    return encode(type, v);
  }
};

// Code of element i, decoded here from the documented layout.
int code_at(const std::vector<uint8_t>& q, size_t i, int bits) {
  if (bits == 8) return static_cast<int8_t>(q[i]);
  const int nibble = (i % 2 == 0) ? (q[i / 2] & 0xF) : (q[i / 2] >> 4);
  return nibble >= 8 ? nibble - 16 : nibble;
}

struct Quantized {
  std::vector<uint8_t> q;
  std::vector<float> scales;
};

// Runs the backend with poisoned outputs and a guard past each end.
Quantized quantize(DeviceServices& services, const Input& in, size_t block, int bits) {
  const size_t n = in.values.size(), nblocks = (n + block - 1) / block;
  std::vector<uint8_t> q(code_bytes(n, bits) + 8, 0xA5);
  std::vector<float> scales(nblocks + 2, -1.f);
  services.quantize_blocks(q.data(), scales.data(), in.raw.data(), in.type, n, block, bits);
  for (size_t i = code_bytes(n, bits); i < q.size(); ++i) CHECK(q[i] == 0xA5);
  CHECK(scales[nblocks] == -1.f);
  CHECK(scales[nblocks + 1] == -1.f);
  q.resize(code_bytes(n, bits));
  scales.resize(nblocks);
  return {q, scales};
}

// The contract, block by block. The error bound: with s = scale, fl(x / s) is
// within 2^-24 |x / s| of x / s, rint moves it at most 1/2, so
// |x - code * s| <= s / 2 + 2^-24 |x|; the clamp never binds, since
// |x / s| <= qmax (1 + 2^-23).
void check_quantized(const std::vector<float>& x, const Quantized& got, size_t block, int bits) {
  const int qmax = qmax_of(bits);
  const size_t n = x.size();
  size_t bad_scales = 0, bad_codes = 0, bad_errors = 0, bad_extremes = 0;
  std::string first_bad;
  for (size_t b = 0, at = 0; at < n; b++, at += block) {
    const size_t len = std::min(block, n - at);
    double amax = 0;
    for (size_t i = at; i < at + len; ++i) amax = std::max(amax, std::fabs(double(x[i])));
    const float want = static_cast<float>(amax / qmax);
    const float s = got.scales[b];
    if (std::memcmp(&s, &want, 4) != 0) {
      if (!bad_scales++)
        first_bad +=
            "block " + std::to_string(b) + ": scale " + exact(s) + " want " + exact(want) + "; ";
    }
    for (size_t i = at; i < at + len; ++i) {
      const int c = code_at(got.q, i, bits);
      if (c < -qmax || c > qmax || (s == 0 && c != 0)) {
        if (!bad_codes++) first_bad += "element " + std::to_string(i) + ": code out of range; ";
        continue;
      }
      const double err = std::fabs(double(x[i]) - double(c) * s);
      const double bound = 0.5 * s * (1 + 1e-6) + std::ldexp(std::fabs(double(x[i])), -24);
      if (err > bound && !bad_errors++)
        first_bad += "element " + std::to_string(i) + ": x " + exact(x[i]) + " code " +
                     std::to_string(c) + " scale " + exact(s) + "; ";
      // The largest magnitude maps to +-qmax (when s is normal: a subnormal
      // scale is too coarse to promise it).
      if (s >= FLT_MIN && std::fabs(double(x[i])) == amax && c != (x[i] < 0 ? -qmax : qmax))
        if (!bad_extremes++) first_bad += "element " + std::to_string(i) + ": extreme not qmax; ";
    }
  }
  INFO("n " << n << " block " << block << " bits " << bits << ": " << first_bad);
  CHECK(bad_scales == 0);
  CHECK(bad_codes == 0);
  CHECK(bad_errors == 0);
  CHECK(bad_extremes == 0);
}

// Dequantize into fp32 and bf16 (fresh and accumulating onto random values)
// and compare bit for bit with code * scale as one fp32 product (an int of 8
// bits times a float is exact in double), plus the previous value as one fp32
// sum, rounded once more for bf16.
void check_dequantize(DeviceServices& services, Rng& rng, const Quantized& qz, size_t n,
                      size_t block, int bits) {
  std::vector<float> value(n);
  for (size_t i = 0; i < n; ++i)
    value[i] = round_to_f32(double(code_at(qz.q, i, bits)) * qz.scales[i / block]);
  const std::vector<float> prev = rng.gaussian(n, 1.0);
  for (const DType ot : {DType::F32, DType::BF16}) {
    for (const bool accumulate : {false, true}) {
      std::vector<float> out_values(n);
      for (size_t i = 0; i < n; ++i)
        out_values[i] = ot == DType::BF16 ? bf16_value(bf16_bits(prev[i])) : prev[i];
      Input out = encode(ot, out_values);
      services.dequantize_blocks(out.raw.data(), ot, qz.q.data(), qz.scales.data(), n, block, bits,
                                 accumulate);
      size_t mismatches = 0, first = n;
      for (size_t i = 0; i < n; ++i) {
        const float sum = accumulate ? round_to_f32(double(out_values[i]) + value[i]) : value[i];
        const float want = ot == DType::BF16 ? bf16_value(bf16_bits(sum)) : sum;
        float got;
        if (ot == DType::F32) {
          std::memcpy(&got, &out.raw[4 * i], 4);
        } else {
          uint16_t b;
          std::memcpy(&b, &out.raw[2 * i], 2);
          got = bf16_value(b);
        }
        if (std::memcmp(&got, &want, 4) != 0 && !mismatches++) first = i;
      }
      INFO("dequantize n " << n << " block " << block << " bits " << bits << " into "
                           << (ot == DType::F32 ? "fp32" : "bf16")
                           << (accumulate ? " accumulating" : "") << ": first mismatch at "
                           << first);
      CHECK(mismatches == 0);
    }
  }
}

}  // namespace

TEST_CASE("quantize_blocks: scales, codes and error bound over many shapes and dtypes", "[quant]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  Rng rng(1);
  struct Shape {
    size_t n, block;
  };
  std::vector<Shape> shapes = {{1, 1},      {7, 1},      {5, 3},       {1000, 7},
                               {2, 2},      {6, 4},      {12, 6},      {1024, 256},
                               {1000, 256}, {100, 1000}, {4098, 2048}, {20002, 20000}};
  for (int k = 0; k < 6; ++k) shapes.push_back({rng.size(1, 5000), rng.size(1, 600)});
  for (const Shape& sh : shapes) {
    for (const int bits : {8, 4}) {
      // 4 bits packs whole bytes: n and block even.
      const size_t n = bits == 4 ? sh.n + sh.n % 2 : sh.n;
      const size_t block = bits == 4 ? sh.block + sh.block % 2 : sh.block;
      for (const DType t : {DType::F32, DType::BF16, DType::F16}) {
        const Input in = rng.values(t, n);
        const Quantized qz = quantize(services, in, block, bits);
        check_quantized(in.values, qz, block, bits);
        if (t == DType::F32) check_dequantize(services, rng, qz, n, block, bits);
      }
    }
  }
}

TEST_CASE("quantize_blocks: zero blocks, one huge value, extremes and ties", "[quant]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  Rng rng(2);
  const size_t block = 64;
  std::vector<float> x = rng.gaussian(6 * block, 1.0);
  float* blk[6];
  for (int b = 0; b < 6; ++b) blk[b] = &x[b * block];
  std::fill(blk[0], blk[0] + block, 0.f);                 // all zero: scale 0, codes 0
  for (size_t i = 0; i < block; ++i) blk[1][i] *= 1e-3f;  // one huge value among small ones
  blk[1][17] = 1e30f;
  blk[2][5] = -FLT_MAX;  // the most negative float sets the scale
  blk[2][40] = FLT_MAX;
  for (size_t i = 0; i < block; ++i) blk[3][i] = std::fmod(blk[3][i], 4.f);
  blk[3][63] = -5.f;  // the largest magnitude is negative: code -qmax
  for (size_t i = 0; i < block; ++i) blk[5][i] *= 1e-39f;  // subnormal values and scale
  for (const int bits : {8, 4}) {
    // Block 4 puts values on the half steps of scale 1 (amax = qmax): rint
    // rounds half to even.
    const int qmax = qmax_of(bits);
    const float halves[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 5.5f, -6.5f};
    const int even[] = {0, 2, 2, 0, -2, -2, 6, -6};
    std::fill(blk[4], blk[4] + block, 0.25f);
    blk[4][0] = static_cast<float>(qmax);
    for (int k = 0; k < 8; ++k) blk[4][1 + k] = halves[k];
    const Input in = encode(DType::F32, x);
    const Quantized qz = quantize(services, in, block, bits);
    check_quantized(x, qz, block, bits);
    CHECK(qz.scales[0] == 0.f);
    for (size_t i = 0; i < block; ++i) CHECK(code_at(qz.q, i, bits) == 0);
    CHECK(code_at(qz.q, block + 17, bits) == qmax);
    CHECK(code_at(qz.q, 2 * block + 5, bits) == -qmax);
    CHECK(code_at(qz.q, 2 * block + 40, bits) == qmax);
    CHECK(code_at(qz.q, 3 * block + 63, bits) == -qmax);
    CHECK(qz.scales[4] == 1.f);
    for (int k = 0; k < 8; ++k) CHECK(code_at(qz.q, 4 * block + 1 + k, bits) == even[k]);
    check_dequantize(services, rng, qz, x.size(), block, bits);
  }
}

TEST_CASE("quantize_blocks: byte layout of 8- and 4-bit codes", "[quant]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  // Two blocks of 16: -7..7 then 0, so that scale is 1 and codes equal values;
  // the second block negated and doubled (scale 2, the same codes negated).
  std::vector<float> x(32);
  for (int i = 0; i < 16; ++i) x[i] = i < 15 ? static_cast<float>(i - 7) : 0.f;
  for (int i = 0; i < 16; ++i) x[16 + i] = -2 * x[i];
  const Input in = encode(DType::F32, x);
  // 4 bits: element 2i in the low nibble of byte i, two's complement.
  const Quantized q4 = quantize(services, in, 16, 4);
  const std::vector<uint8_t> want4 = {0xA9, 0xCB, 0xED, 0x0F, 0x21, 0x43, 0x65, 0x07,
                                      0x67, 0x45, 0x23, 0x01, 0xEF, 0xCD, 0xAB, 0x09};
  CHECK(q4.q == want4);
  CHECK(q4.scales == std::vector<float>{1.f, 2.f});
  // 8 bits: one int8 per element (amax 7 -> scale 7 / 127).
  const Quantized q8 = quantize(services, in, 16, 8);
  CHECK(q8.q[0] == 0x81);   // -7 / (7 / 127) = -127
  CHECK(q8.q[14] == 0x7F);  // 127
  CHECK(q8.q[15] == 0x00);
  CHECK(q8.q[16] == 0x7F);  // 14 / (14 / 127)
  // 4-bit blocks start at byte b * block / 2: block 6 over 12 elements.
  std::vector<float> y = {1, 2, 3, 4, 5, 7, -7, -5, -4, -3, -2, -1};
  const Quantized q6 = quantize(services, encode(DType::F32, y), 6, 4);
  CHECK(q6.scales == std::vector<float>{1.f, 1.f});
  CHECK(q6.q == std::vector<uint8_t>{0x21, 0x43, 0x75, 0xB9, 0xDC, 0xFE});
}

TEST_CASE("quantize_blocks: Gaussian error against the uniform-rounding model", "[quant]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  Rng rng(3);
  const size_t n = size_t(1) << 18, block = 256;
  const std::vector<float> x = rng.gaussian(n, 1.0);
  const Input in = encode(DType::F32, x);
  for (const int bits : {8, 4}) {
    const Quantized qz = quantize(services, in, block, bits);
    // Model: each element's error is uniform over +-scale/2, variance s^2/12.
    double err2 = 0, x2 = 0, model2 = 0;
    for (size_t i = 0; i < n; ++i) {
      const double s = qz.scales[i / block];
      const double e = double(x[i]) - code_at(qz.q, i, bits) * s;
      err2 += e * e;
      x2 += double(x[i]) * x[i];
      model2 += s * s / 12;
    }
    const double measured = std::sqrt(err2 / x2), model = std::sqrt(model2 / x2);
    std::printf(
        "[quant] Gaussian n=%zu block=%zu, %d bits: relative RMS error %.5f (uniform-rounding "
        "model scale/sqrt(12): %.5f, ratio %.4f)\n",
        n, block, bits, measured, model, measured / model);
    // Statistical spread of the measured mean square at this n: about 0.2%;
    // 5% covers it and the non-uniform tails of a Gaussian's bins at 4 bits.
    CHECK(measured <= model * 1.05);
  }
}

TEST_CASE("quantize_blocks / dequantize_blocks refuse bad widths and odd 4-bit shapes", "[quant]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  std::vector<float> x(16, 1.f), scales(16), out(16);
  std::vector<uint8_t> q(16);
  struct Bad {
    size_t n, block;
    int bits;
  };
  for (const Bad& bad : {Bad{16, 4, 0}, Bad{16, 4, 3}, Bad{16, 4, 16}, Bad{16, 4, 2}, Bad{16, 0, 8},
                         Bad{15, 4, 4}, Bad{16, 3, 4}, Bad{16, 0, 4}}) {
    INFO("n " << bad.n << " block " << bad.block << " bits " << bad.bits);
    CHECK_THROWS_AS(services.quantize_blocks(q.data(), scales.data(), x.data(), DType::F32, bad.n,
                                             bad.block, bad.bits),
                    std::logic_error);
    CHECK_THROWS_AS(services.dequantize_blocks(out.data(), DType::F32, q.data(), scales.data(),
                                               bad.n, bad.block, bad.bits, false),
                    std::logic_error);
  }
  try {
    services.quantize_blocks(q.data(), scales.data(), x.data(), DType::F32, 15, 4, 4);
  } catch (const std::logic_error& e) {
    require_parts(e.what(), {"4 bits", "15 elements", "blocks of 4"});
  }
}

}  // namespace zt
