// The CUDA blockwise quantizer (model/cuda/quantize.cu) against the CPU
// reference on fresh random inputs: codes and scales bit for bit for fp32, bf16
// and fp16 input (both backends widen exactly and divide in IEEE fp32), and
// dequantize, fresh or accumulating, bit for bit into fp32, bf16 and fp16
// (single-rounded fp32 product and sum, then round to nearest even). Shapes
// reach every kernel path: groups of 8, 32 or 256 threads per block, vector
// and narrow units, misaligned buffers, a last block shorter than the others.
// Without a usable GPU every test prints one SKIPPED line and passes.
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
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

using Bytes = std::vector<uint8_t>;

// Random finite values of `type` as raw bytes: Gaussian fp32 of a random
// spread, its top halves for bf16, finite binary16 patterns (subnormals too).
Bytes random_values(std::mt19937_64& gen, DType type, size_t n) {
  Bytes raw(n * dtype_size(type));
  if (type == DType::F16) {
    std::uniform_int_distribution<int> bits(0, 0xFFFF);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      do h = static_cast<uint16_t>(bits(gen));
      while (((h >> 10) & 0x1F) == 0x1F);
      std::memcpy(&raw[2 * i], &h, 2);
    }
    return raw;
  }
  const double sigma = std::ldexp(1.0, std::uniform_int_distribution<int>(-20, 20)(gen));
  std::normal_distribution<float> d(0.f, static_cast<float>(sigma));
  for (size_t i = 0; i < n; ++i) {
    const float x = d(gen);
    if (type == DType::F32) {
      std::memcpy(&raw[4 * i], &x, 4);
    } else {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      const uint16_t b = static_cast<uint16_t>(u >> 16);
      std::memcpy(&raw[2 * i], &b, 2);
    }
  }
  return raw;
}

// A device allocation of `bytes` plus `offset` leading bytes, released on exit;
// at() is the (possibly misaligned) start the test uses.
struct DeviceBytes {
  Ops& ops;
  size_t offset;
  void* base;
  DeviceBytes(Ops& o, size_t bytes, size_t off)
      : ops(o), offset(off), base(o.alloc(bytes + off + 16, MemCategory::Activations)) {}
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() { ops.release(base); }
  void* at() const { return static_cast<uint8_t*>(base) + offset; }
};

DType dtype_from_index(int i) { return i == 0 ? DType::F32 : i == 1 ? DType::BF16 : DType::F16; }
const char* dtype_label(DType t) {
  return t == DType::F32 ? "fp32" : t == DType::BF16 ? "bf16" : "fp16";
}

size_t count_differing(const Bytes& a, const Bytes& b, size_t elem) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); i += elem) n += std::memcmp(&a[i], &b[i], elem) != 0;
  return n;
}

struct Case {
  size_t n, block;
  int bits;
  size_t misalign;  // elements of offset on every device buffer (0: aligned)
};

// One case: quantize on both backends, compare; then dequantize the CPU's
// codes on both, into every dtype, fresh and accumulating, and compare.
void run_case(Ops& cpu, Ops& gpu, std::mt19937_64& gen, const Case& c, DType xt) {
  INFO("n " << c.n << " block " << c.block << " bits " << c.bits << " misalign " << c.misalign
            << " input " << dtype_label(xt));
  const size_t nblocks = (c.n + c.block - 1) / c.block;
  const size_t qbytes = c.bits == 8 ? c.n : c.n / 2, es = dtype_size(xt);
  const Bytes x = random_values(gen, xt, c.n);
  Bytes q_cpu(qbytes), q_gpu(qbytes);
  std::vector<float> s_cpu(nblocks), s_gpu(nblocks);
  cpu.services().quantize_blocks(q_cpu.data(), s_cpu.data(), x.data(), xt, c.n, c.block, c.bits);

  DeviceBytes dx(gpu, x.size(), c.misalign * es), dq(gpu, qbytes, c.misalign),
      ds(gpu, nblocks * 4, 0);
  gpu.from_host(dx.at(), x.data(), x.size());
  gpu.services().quantize_blocks(dq.at(), static_cast<float*>(ds.at()), dx.at(), xt, c.n, c.block,
                                 c.bits);
  gpu.to_host(q_gpu.data(), dq.at(), qbytes);
  gpu.to_host(s_gpu.data(), ds.at(), nblocks * 4);
  CHECK(count_differing(q_gpu, q_cpu, 1) == 0);
  CHECK(std::memcmp(s_gpu.data(), s_cpu.data(), nblocks * 4) == 0);

  gpu.from_host(dq.at(), q_cpu.data(), qbytes);
  gpu.from_host(ds.at(), s_cpu.data(), nblocks * 4);
  for (int t = 0; t < 3; ++t) {
    const DType ot = dtype_from_index(t);
    const size_t os = dtype_size(ot);
    for (const bool accumulate : {false, true}) {
      INFO("dequantize into " << dtype_label(ot) << (accumulate ? " accumulating" : ""));
      Bytes out_cpu = random_values(gen, ot, c.n), out_gpu(out_cpu.size());
      DeviceBytes dout(gpu, out_cpu.size(), c.misalign * os);
      gpu.from_host(dout.at(), out_cpu.data(), out_cpu.size());
      cpu.services().dequantize_blocks(out_cpu.data(), ot, q_cpu.data(), s_cpu.data(), c.n, c.block,
                                       c.bits, accumulate);
      gpu.services().dequantize_blocks(dout.at(), ot, dq.at(), static_cast<const float*>(ds.at()),
                                       c.n, c.block, c.bits, accumulate);
      gpu.to_host(out_gpu.data(), dout.at(), out_gpu.size());
      CHECK(count_differing(out_gpu, out_cpu, os) == 0);
    }
  }
}

}  // namespace

TEST_CASE("cuda quantize_blocks / dequantize_blocks equal the cpu bit for bit", "[gpu]") {
  if (no_gpu()) {
    SUCCEED("no usable CUDA device");
    return;
  }
  auto cpu = make_cpu_ops();
  auto gpu = make_cuda_ops(0);
  std::mt19937_64 gen(test_seed() + 0x51ED);
  std::vector<Case> cases;
  // Group of 8 (block <= 16 units), 32 (<= 2048 units), 256 (longer blocks);
  // odd and unit blocks, a short last block, blocks longer than n.
  const size_t shapes[][2] = {{1, 1},         {7, 1},         {1000, 7},     {4096, 16},
                              {1000, 64},     {4099, 256},    {65536, 2048}, {100003, 2048},
                              {40000, 20000}, {70001, 34000}, {300, 1000}};
  for (const auto& sh : shapes)
    for (const int bits : {8, 4})
      for (const size_t misalign : {size_t{0}, size_t{1}}) {
        const size_t n = bits == 4 ? sh[0] + sh[0] % 2 : sh[0];
        const size_t block = bits == 4 ? sh[1] + sh[1] % 2 : sh[1];
        cases.push_back({n, block, bits, misalign});
      }
  std::uniform_int_distribution<size_t> size(1, 50000), blk(1, 5000);
  for (int k = 0; k < 4; ++k) {
    const size_t n = size(gen), block = blk(gen);
    cases.push_back({n, block, 8, 0});
    cases.push_back({n + n % 2, block + block % 2, 4, 0});
  }
  cases.push_back({size_t{1} << 22, 2048, 8, 0});  // a ZeRO++-sized buffer
  cases.push_back({size_t{1} << 22, 2048, 4, 0});
  for (const Case& c : cases)
    for (int t = 0; t < 3; ++t) run_case(*cpu, *gpu, gen, c, dtype_from_index(t));
}

TEST_CASE("cuda quantize_blocks refuses what the cpu refuses", "[gpu]") {
  if (no_gpu()) {
    SUCCEED("no usable CUDA device");
    return;
  }
  auto gpu = make_cuda_ops(0);
  DeviceBytes buf(*gpu, 1024, 0);
  float* scales = static_cast<float*>(buf.at());
  for (const int bits : {0, 3, 16}) {
    CHECK_THROWS_AS(
        gpu->services().quantize_blocks(buf.at(), scales, buf.at(), DType::F32, 16, 4, bits),
        std::logic_error);
    CHECK_THROWS_AS(gpu->services().dequantize_blocks(buf.at(), DType::F32, buf.at(), scales, 16, 4,
                                                      bits, false),
                    std::logic_error);
  }
  CHECK_THROWS_AS(gpu->services().quantize_blocks(buf.at(), scales, buf.at(), DType::F32, 15, 4, 4),
                  std::logic_error);
  CHECK_THROWS_AS(
      gpu->services().quantize_blocks(buf.at(), scales, buf.at(), DType::BF16, 16, 3, 4),
      std::logic_error);
  CHECK_THROWS_AS(gpu->services().quantize_blocks(buf.at(), scales, buf.at(), DType::F32, 16, 0, 8),
                  std::logic_error);
}

}  // namespace zt
