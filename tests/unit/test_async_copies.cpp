// DeviceServices' asynchronous host copies on the CPU backend: a copy lands no earlier
// than its wait (the latest moment the contract allows, so callers that read
// or reuse a buffer early fail the offload tests), waits are cumulative over
// tickets, and each copy reads its source as it is at the wait.
#include <cstring>
#include <vector>

#include "model/device_services.h"
#include "model/ops.h"
#include "tests/support/catch.h"

namespace zt {
namespace {

TEST_CASE("cpu async copies land at their wait, in ticket order", "[cpu_ops]") {
  auto ops = make_cpu_ops();
  DeviceServices& services = ops->services();
  std::vector<float> src(64), dst(64, -1.0f), up(16, 0.0f);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<float>(i);
  const uint64_t a = services.to_host_async(dst.data(), src.data(), 16 * 4);
  const uint64_t b = services.to_host_async(dst.data() + 16, src.data() + 16, 16 * 4);
  const uint64_t c = services.from_host_async(up.data(), src.data() + 32, 16 * 4);
  CHECK(a > 0);
  CHECK(b > a);
  CHECK(c > b);
  CHECK(dst[0] == -1.0f);  // nothing has moved before a wait
  services.wait_copy(b);   // a and b, not c
  for (int i = 0; i < 32; i++) CHECK(dst[i] == static_cast<float>(i));
  CHECK(dst[32] == -1.0f);
  CHECK(up[0] == 0.0f);
  src[40] = 1000.0f;  // a caller that breaks the contract sees it
  services.wait_copy(c);
  CHECK(up[8] == 1000.0f);
  CHECK(up[0] == 32.0f);
  services.wait_copy(c);  // waiting again, or for nothing, is harmless
  services.wait_copy(0);
}

}  // namespace
}  // namespace zt
