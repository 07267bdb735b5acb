#include "zero/grid/tensor_parallel_hooks.h"

#include <stdexcept>

namespace zt {

TensorCall tensor_call(Combine what, DType model) {
  switch (what) {
    case Combine::Sum: return {Primitive::AllReduce, model, false};
    case Combine::SumFloats: return {Primitive::AllReduce, DType::F32, false};
    case Combine::LogSumExp: return {Primitive::AllGather, DType::F32, false};
    case Combine::GatherRows: return {Primitive::AllGather, model, true};
    case Combine::ScatterSum: return {Primitive::ReduceScatter, model, true};
    case Combine::SumLayerNormGrads: return {Primitive::AllReduce, model, false};
  }
  throw std::logic_error("tensor_call: unknown combine");
}

TensorParallelHooks::TensorParallelHooks(ModuleHooks& inner, const ParamTable& shard, Ops& ops,
                                         Communicator& tensor)
    : inner_(inner), shard_(shard), ops_(ops), tensor_(tensor) {
  if (tensor.world() != shard.split().degree || tensor.rank() != shard.split().index)
    throw std::invalid_argument("tensor parallelism: shard " + std::to_string(shard.split().index) +
                                " of " + std::to_string(shard.split().degree) + " runs on rank " +
                                std::to_string(tensor.rank()) + " of a group of " +
                                std::to_string(tensor.world()));
  for (const ModuleInfo& m : shard.modules())
    bias_after_sum_.push_back(m.params.size() == 2 &&
                              shard.params()[m.params[0]].cut == ShardCut::Columns);
  const size_t C = shard.config().n_embd;
  zero_bias_ = ops.alloc(C * dtype_size(ops.dtype()), MemCategory::CommBuffers);
}

TensorParallelHooks::~TensorParallelHooks() {
  ops_.release(zero_bias_);
  if (lse_parts_) ops_.release(lse_parts_);
}

const void* const* TensorParallelHooks::fetch(int module, bool backward) {
  const void* const* params = inner_.fetch(module, backward);
  if (backward || shard_.split().index == 0 || !bias_after_sum_[module]) return params;
  substituted_[0] = params[0];
  substituted_[1] = zero_bias_;
  return substituted_;
}

void TensorParallelHooks::combine(int module, bool backward, Combine what, void* buf,
                                  size_t count) {
  (void)module, (void)backward;
  const TensorCall call = tensor_call(what, ops_.dtype());
  if (call.primitive == Primitive::AllReduce) {
    tensor_.all_reduce(buf, count, call.dtype)->wait();
    return;
  }
  if (call.shard_part) {
    const size_t part = count / static_cast<size_t>(tensor_.world());
    char* mine = static_cast<char*>(buf) + tensor_.rank() * part * dtype_size(call.dtype);
    if (call.primitive == Primitive::ReduceScatter)
      tensor_.reduce_scatter(buf, mine, part, call.dtype)->wait();
    else tensor_.all_gather(mine, buf, part, call.dtype)->wait();
    return;
  }
  if (lse_rows_ < count) {
    if (lse_parts_) ops_.release(lse_parts_);
    lse_parts_ = static_cast<float*>(
        ops_.alloc(count * tensor_.world() * sizeof(float), MemCategory::CommBuffers));
    lse_rows_ = count;
  }
  tensor_.all_gather(buf, lse_parts_, count, call.dtype)->wait();
  ops_.logsumexp_merge(static_cast<float*>(buf), lse_parts_, tensor_.world(),
                       static_cast<int>(count));
}

}  // namespace zt
