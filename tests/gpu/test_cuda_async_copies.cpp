// The CUDA backend's asynchronous host copies (ZeRO-Offload's gradient and
// parameter streams) on fresh random bf16 data: each copy sees the compute
// stream's work issued before it, later work sees it after the wait, pinned and
// pageable host memory alike, and many copies in flight at once complete in
// order. Without a usable GPU every test prints one SKIPPED line and passes.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "model/device_services.h"
#include "model/host_floats.h"
#include "model/ops.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = float_to_bf16(d(rng));
  return v;
}

TEST_CASE("cuda async copies are ordered after the compute stream and before the wait", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  DeviceServices& services = gpu->services();
  std::mt19937_64 rng(test_seed());
  const size_t n = (size_t(1) << 20) + 37, pieces = 16, piece = n / pieces;
  for (bool pinned : {true, false}) {
    CAPTURE(pinned);
    const std::vector<uint16_t> values = random_bf16(n, rng);
    auto* host = static_cast<uint16_t*>(services.alloc_host(n * 2, MemCategory::Optimizer, pinned));
    void* dev = gpu->alloc(n * 2, MemCategory::Grads);
    // Upload, then double on the compute stream (dev += dev, exact in bf16),
    // then copy down in pieces: every piece must show the doubled values.
    std::memcpy(host, values.data(), n * 2);
    services.wait_copy(services.from_host_async(dev, host, n * 2));
    services.add_inplace(dev, dev, n);
    std::memset(host, 0, n * 2);
    uint64_t last = 0;
    for (size_t p = 0; p < pieces; p++) {
      const size_t k = p + 1 == pieces ? n - p * piece : piece;
      last =
          services.to_host_async(host + p * piece, static_cast<uint16_t*>(dev) + p * piece, k * 2);
    }
    services.wait_copy(last);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
      wrong += bf16_to_float(host[i]) != 2.0f * bf16_to_float(values[i]);
    CHECK(wrong == 0);
    // A copy up, waited for, is what the next kernel reads.
    for (size_t i = 0; i < n; i++) host[i] = values[i];
    services.wait_copy(services.from_host_async(dev, host, n * 2));
    services.add_inplace(dev, dev, n);
    std::vector<uint16_t> back(n);
    gpu->to_host(back.data(), dev, n * 2);
    wrong = 0;
    for (size_t i = 0; i < n; i++)
      wrong += bf16_to_float(back[i]) != 2.0f * bf16_to_float(values[i]);
    CHECK(wrong == 0);
    gpu->release(dev);
    services.release_host(host);
  }
}

}  // namespace
}  // namespace zt
