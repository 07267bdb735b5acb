// A CPU's fp32 matmul rate, the peak that `report --portability` divides CPU
// runs' model FLOP/s by: the CPU backend's own GEMM (cpu::gemm: OpenBLAS's
// cblas_sgemm when built with it) on square n×n×n products, on every core.
#pragma once
#include <string>

namespace zt {

struct SgemmRate {
  double flops_per_second = 0;  // 2·n³ over the fastest repetition
  int n = 0, threads = 0, reps = 0;
  std::string backend;  // cpu::cpu_matmul_backend()
};

// One warm-up product, then `reps` timed ones; the fastest counts, as a peak.
SgemmRate measure_sgemm(int n = 1024, int reps = 5);

}  // namespace zt
