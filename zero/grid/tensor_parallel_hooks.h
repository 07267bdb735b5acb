// Tensor parallelism as a transform (DESIGN.md, "The parallel grid"): the
// model runs on its shard's table (model/param_table.h), ZeRO serves the
// shard's parameters over the data-parallel group, and these hooks sit in
// between. They pass every fetch, release and gradient event to ZeRO and
// carry out the model's combine points over the tensor group: Megatron-LM's
// conjugate operators (the all-reduce after a column-cut projection in the
// forward and after a row-cut projection's input gradient in the backward;
// the identity in the other direction needs no call) and the vocabulary-
// parallel embedding and cross-entropy. Under sequence parallelism the sums
// of the activations are reduce-scatters and the gathers of the rows
// all-gathers, both in place over the shard's part (model/module_hooks.h).
//
// One more duty: a column-cut projection's bias is whole on every shard but
// must enter the summed output once, so shards other than 0 are handed a
// zero bias in the forward; its gradient (from the whole output gradient)
// is the same on every shard, as for every tensor kept whole.
#pragma once
#include <vector>

#include "model/module_hooks.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "zero/comm/communicator.h"

namespace zt {

// The call a combine makes over the tensor group: sums are all-reduces, the
// log-sum-exp an all-gather of every shard's rows, merged where it lands;
// under sequence parallelism reduce-scatters and all-gathers of the rows.
// One place: the hooks issue it, `plan` lists it.
struct TensorCall {
  Primitive primitive;
  DType dtype;
  bool shard_part;  // its count is the shard's part of the buffer, count / degree
};
TensorCall tensor_call(Combine what, DType model);

class TensorParallelHooks : public ModuleHooks {
 public:
  // tensor: the communicator over this shard's tensor group, ranked by shard.
  TensorParallelHooks(ModuleHooks& inner, const ParamTable& shard, Ops& ops, Communicator& tensor);
  ~TensorParallelHooks() override;
  TensorParallelHooks(const TensorParallelHooks&) = delete;
  TensorParallelHooks& operator=(const TensorParallelHooks&) = delete;

  const void* const* fetch(int module, bool backward) override;
  void release(int module, bool backward) override { inner_.release(module, backward); }
  void* grad(int param) override { return inner_.grad(param); }
  void grad_ready(int param) override { inner_.grad_ready(param); }
  void combine(int module, bool backward, Combine what, void* buf, size_t count) override;

 private:
  ModuleHooks& inner_;
  const ParamTable& shard_;
  Ops& ops_;
  Communicator& tensor_;
  // Per module: true where its bias enters after the sum (a column-cut weight).
  std::vector<bool> bias_after_sum_;
  void* zero_bias_ = nullptr;
  float* lse_parts_ = nullptr;  // every shard's log-sum-exp rows, [degree, rows]
  size_t lse_rows_ = 0;
  const void* substituted_[2] = {nullptr, nullptr};
};

}  // namespace zt
