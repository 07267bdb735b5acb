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
  // Collectives of a steady-state step, and of the very first step (which differs
  // only in stage 3, whose first micro-step traces the unit order).
  std::array<PlannedPrimitive, static_cast<int>(Primitive::kCount)> per_step{}, first_step{};
  uint64_t padded_params = 0;
  uint64_t params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;  // per rank
  uint64_t gradient_bus_bytes = 0;      // the part of bus bytes that moves gradients
  uint64_t persistent_bytes = 0;        // stage 3: parameters kept whole on every rank
  uint64_t live_params_peak_bytes = 0;  // stage 3: most parameter bytes gathered at once
  const PlannedPrimitive& operator[](Primitive p) const { return per_step[static_cast<int>(p)]; }
};

// One optimizer step of `micro_steps` micro-steps at world size W; dtype is the
// model dtype (fp32 on the CPU, bf16 on the GPU). unit_trace is the order in
// which one micro-step acquires units' parameters (stage 3's gathers follow it).
StepPlan plan_step(const ZeroConfig& z, const ParamTable& table, int world, int micro_steps,
                   DType dtype, const std::vector<int>& unit_trace);

}  // namespace zt
