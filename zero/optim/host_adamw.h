// ZeRO-Offload's CPU optimizer: AdamW over fp32 arrays in host memory, run by a
// pool of threads, each on one contiguous range in 8-wide blocks that the
// compiler turns into SIMD. The arithmetic is cpu::adamw's
// (model/cpu/cpu_kernels.h) in the same order and precision, so on the CPU
// backend an offloaded run is bit-identical to the in-memory optimizer.
#pragma once
#include <cstddef>
#include <memory>

#include "model/ops.h"

namespace zt {

class HostAdamW {
 public:
  explicit HostAdamW(int threads);
  ~HostAdamW();
  HostAdamW(const HostAdamW&) = delete;
  HostAdamW& operator=(const HostAdamW&) = delete;
  int threads() const { return threads_; }
  // master, m and v updated in place from grad; param (may be null) gets the new master.
  void step(float* master, const float* grad, float* m, float* v, float* param, size_t n,
            const AdamWArgs& a);

 private:
  class Pool;
  int threads_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace zt
