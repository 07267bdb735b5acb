// The global gradient norm when the model itself is split across ranks
// (docs/parallel_grid.md, "Gradient norm and clipping"). ZeRO reduces the
// sum of squares over the data-parallel group as DeepSpeed does; with a model
// split, each rank then holds only its part of the model's sum, and tensors
// kept whole on several model-parallel ranks would be counted once per copy.
//
// The rule is Megatron-LM's (megatron/core/optimizer/clip_grads.py,
// get_grad_norm_fp32, fed by the optimizer's grads-for-norm filter): every
// rank squares the gradients of the tensors it owns, leaving out a tensor
// that is a copy of one held on another model-parallel rank (for tensor
// parallelism, param_is_not_tensor_parallel_duplicate: a tensor not marked
// as split counts on tensor rank 0 only; for pipelines, param_is_not_shared
// leaves out the last stage's copy of the tied embedding), then sums those
// partial squares over the model-parallel group before the square root.
// DeepSpeed's ZeRO optimizers do the same after their data-parallel
// reduction (_model_parallel_all_reduce, after the sum over the
// data-parallel group), and sync their overflow flag over that group too
// (has_overflow: a MAX all-reduce), so that every shard skips a step together.
#pragma once
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "zero/comm/communicator.h"
#include "zero/optim/shard_optimizer.h"
#include "zero/schedule/schedule.h"

namespace zt {

struct ModelParallelNorm {
  // Per tensor of this rank's table: whether its gradient counts toward the
  // norm on this rank. Empty: every tensor does.
  std::vector<bool> counts;
  // The model-parallel groups the partial sums are added over, in turn (the
  // tensor group, then the pipeline group: together every rank of this
  // rank's data-parallel index); empty: none (this rank's sum is the model's).
  std::vector<Communicator*> groups;
};

// A tensor shard's rule: tensors cut across the tensor group count on every
// rank, those kept whole (ShardCut::Whole) on tensor rank 0 only.
ModelParallelNorm tensor_parallel_norm(const ParamTable& shard, Communicator& tensor);
// A part of the grid (model/param_table.h: a tensor shard of a pipeline
// stage): the tensor rule where `tensor` is given, and with `pipeline`, the
// last stage's copy of the tied wte left out (Megatron's param_is_not_shared).
ModelParallelNorm grid_parallel_norm(const ParamTable& part, Communicator* tensor,
                                     Communicator* pipeline);

// Marks the pieces (each inside one tensor of `table`) whose tensor does not
// count toward the norm on this rank, so that grad_sum_squares leaves them out.
std::vector<OptimPiece> mark_norm_pieces(std::vector<OptimPiece> pieces, const ParamTable& table,
                                         const ModelParallelNorm& mp);

// The model's norm from this rank's sum of squares after the data-parallel
// reduction: the sum over each model-parallel group (one fp32 all-reduce of
// one element per group, Purpose::Scalars), then the square root.
double model_parallel_norm(double squares, const ModelParallelNorm& mp, Ops& ops);
// DeepSpeed's overflow flag, synced over each model-parallel group (one MAX
// all-reduce of one uint8 per group).
bool model_parallel_overflow(bool overflowed, const ModelParallelNorm& mp, Ops& ops);

// The calls the two above add to a step over each model-parallel group, in
// order, as they issue them (`plan` lists these per group): the overflow
// flag where the data-parallel step checks one, then the sum of squares.
std::vector<StepCall> model_parallel_step_calls(bool overflow_check);

}  // namespace zt
