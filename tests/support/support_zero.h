// The ZeRO engine's setup as the tests build it from a ZeroConfig alone (train/zero_setup
// builds it from a whole Config).
#pragma once
#include <string>

#include "model/gpt.h"
#include "model/param_table.h"
#include "zero/layout/param_groups.h"
#include "zero/stages/engine.h"

namespace zt {

// `z` with the model's training events, parameter groups `groups` and clipping
// at `grad_clip` (0: off).
inline ZeroSetup engine_setup(const ZeroConfig& z, const ParamTable& table, double grad_clip,
                              const std::string& groups = "two",
                              Recompute recompute = Recompute::None) {
  ZeroSetup s;
  s.z = z;
  s.groups = make_param_groups(table, groups);
  s.events = GPT::training_events(table, recompute);
  s.grad_clip = grad_clip;
  return s;
}

}  // namespace zt
