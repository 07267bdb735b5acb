// `zerotrain plan`: the exact per-step schedule of collectives and the per-rank
// model-state bytes of a configuration, computed from the same partition,
// bucket plan and gradient path objects a run uses, without training.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "zero/comm_stats.h"
#include "zero/zero_config.h"

namespace zt {

struct PlannedPrimitive {
  uint64_t calls = 0, bytes = 0;  // payload bytes per rank, nccl-tests convention
  double bus_bytes = 0;
};

struct StepPlan {
  int stage = 0;
  std::string grad_path;
  std::array<PlannedPrimitive, static_cast<int>(Primitive::kCount)> per_step{};
  uint64_t padded_params = 0;
  uint64_t params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;  // per rank
  uint64_t gradient_bus_bytes = 0;  // the part of bus bytes that moves gradients
  const PlannedPrimitive& operator[](Primitive p) const { return per_step[static_cast<int>(p)]; }
};

// One optimizer step of `micro_steps` micro-steps at world size W; dtype is the
// model dtype (fp32 on the CPU, bf16 on the GPU).
StepPlan plan_step(const ZeroConfig& z, const ParamTable& table, int world, int micro_steps,
                   DType dtype);

}  // namespace zt
