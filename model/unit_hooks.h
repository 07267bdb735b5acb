// Where the model meets ZeRO. The model never owns parameter or gradient storage:
// it asks for a unit's parameters before using them and for a unit's gradient
// space before its backward adds into it, and says when it is done with each.
// Pointers are the base of the unit's contiguous range in the flat layout
// (ParamTable::units()), in the backend's model dtype and memory space.
#pragma once

namespace zt {

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // Parameters of `unit`, valid until release_params(unit). May gather (stage 3).
  virtual const void* acquire_params(int unit) = 0;
  virtual void release_params(int unit) = 0;
  // Gradient space of `unit` for this micro-step; backward ADDS into it.
  virtual void* acquire_grads(int unit) = 0;
  // The unit's gradients for this micro-step are complete (may start a reduction).
  virtual void grads_ready(int unit) = 0;
};

}  // namespace zt
