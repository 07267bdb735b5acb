// The optimizer parameter groups ZeRO partitions, as DeepSpeed users pass them
// to deepspeed.initialize (train.param_groups):
//   "two" (the HF Trainer's, Megatron-DeepSpeed's): the weights with decay (the
//         embeddings and the 2-D matmul weights), then everything else
//         (biases, layernorm gains and biases) without;
//   "one": every tensor in one group, which then takes weight decay as a
//         single torch parameter group would.
// DeepSpeed keeps one flat buffer per group, takes one gradient norm per group
// and all-gathers each group's parameters separately; every schedule starts here.
#pragma once
#include <string>
#include <vector>

#include "model/param_table.h"

namespace zt {

struct ParamGroup {
  std::vector<int> params;  // in registration (model) order
  bool decay = true;        // the group's weight decay applies to its tensors
};

std::vector<ParamGroup> make_param_groups(const ParamTable& table, const std::string& mode);

}  // namespace zt
