#include "zero/bench/sgemm_bench.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "model/cpu/cpu_matmul.h"

namespace zt {

SgemmRate measure_sgemm(int n, int reps) {
  SgemmRate r;
  r.n = n;
  r.reps = reps;
  r.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.backend = cpu::cpu_matmul_backend();
  set_cpu_threads(r.threads);
  const size_t elements = static_cast<size_t>(n) * n;
  std::vector<float> a(elements), b(elements), c(elements);
  for (size_t i = 0; i < elements; i++) {
    a[i] = static_cast<float>(i % 7) * 0.125f;
    b[i] = static_cast<float>(i % 5) * 0.25f;
  }
  double fastest = 0;
  for (int rep = 0; rep <= reps; rep++) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::gemm(false, false, n, n, n, a.data(), n, b.data(), n, false, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0 && (fastest == 0 || s < fastest)) fastest = s;  // rep 0 warms up
  }
  r.flops_per_second = 2.0 * n * static_cast<double>(n) * n / fastest;
  return r;
}

}  // namespace zt
