// The stage selector and what every schedule derives from the setup.
#include "zero/stages/engine.h"

#include "zero/stages/stages.h"

namespace zt {

std::unique_ptr<ZeroEngine> make_zero_engine(const ZeroSetup& s, const ParamTable& table, Ops& ops,
                                             Communicator& comm) {
  switch (s.z.stage) {
    case 0: return make_stage0(s, table, ops, comm);
    case 1: return make_stage1(s, table, ops, comm);
    case 2: return make_stage2(s, table, ops, comm);
    default: return make_stage3(s, table, ops, comm);
  }
}

std::vector<int> grad_ready_order(const std::vector<ModuleEvent>& events) {
  std::vector<int> order;
  for (const ModuleEvent& e : events)
    if (e.kind == ModuleEvent::GradReady) order.push_back(e.index);
  return order;
}

DType gradient_wire_dtype(const ZeroConfig& z, DType model) {
  if (z.communication_data_type == "fp32") return DType::F32;
  if (z.communication_data_type == "bf16") return DType::BF16;
  if (z.communication_data_type == "fp16") return DType::F16;
  return model;
}

}  // namespace zt
