// DeepSpeed's collectives before the first optimizer step: what
// deepspeed.initialize issues on the traced releases (tests/reference/
// deepspeed, step -1 of every trace), as a list that `plan` prints and the
// trainer issues (issue_startup_calls) through the same objects.
//
//   Every stage: the engine broadcasts each parameter from rank 0, in model
//   order (engine.py, DeepSpeedEngine._broadcast_model).
//   Stage 3: zero.Init broadcasts each parameter again while converting the
//   module (partition_parameters.py, _zero_init_param), then the optimizer
//   all-gathers each tensor's pieces once, parameter group by group (the
//   order of its sub-groups), and calls barrier() three times
//   (stage3.py: _create_fp16_partitions_with_defragmentation,
//   _setup_for_real_optimizer). The gathers (stage3.py's
//   create_reduce_and_remove_grad_hooks: param.all_gather(), 0.14.4) run over
//   the tensor's partition group (partition_parameters.py _allgather_param,
//   get_partition_dp_group): MiCS's shard group where mics_shard_size sets one
//   (traced on 0.14.4: groups of 2, pieces of a half), the world otherwise.
//   Stages 1/2 up to 0.10.3: one barrier() in the optimizer's construction.
// The recorder notes barriers apart from the collectives, without their place
// among them: the list puts them last.
#pragma once
#include <string>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "zero/stages/engine.h"

namespace zt {

struct StartupCall {
  enum Kind { Broadcast, AllGather, Barrier };
  Kind kind;
  int param;     // the tensor it moves; -1 for a barrier
  DType dtype;   // on the wire: the model dtype, or uint8 bytes of it
  size_t count;  // elements on the wire (all-gather: each rank's piece)
  std::string what;
  RankGroup group{0, 1};  // the ranks it runs over; size 0: the world
};

// The calls of the release chosen by s.z.deepspeed_version, for a model
// trained in `model` dtype over `world` ranks.
std::vector<StartupCall> deepspeed_startup_calls(const ZeroSetup& s, const ParamTable& table,
                                                 int world, DType model);

// Issues `calls` over `comm`: each broadcast carries rank 0's value of the
// tensor from `weights` (full fp32 host weights, model layout) in the call's
// dtype and writes it back there, so every rank continues from rank 0's
// weights; each all-gather gathers the ranks' pieces of the tensor.
void issue_startup_calls(const std::vector<StartupCall>& calls, const ParamTable& table,
                         DType model, Ops& ops, Communicator& comm, float* weights);

}  // namespace zt
