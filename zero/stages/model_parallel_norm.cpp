#include "zero/stages/model_parallel_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace zt {
namespace {

// The two calls, as issued and as planned (one place for both).
const StepCall kOverflowCall{StepCall::OverflowCheck,
                             Primitive::AllReduce,
                             1,
                             DType::U8,
                             -1,
                             0,
                             "overflow flag over the model-parallel group (DeepSpeed's "
                             "has_overflow)"};
const StepCall kNormCall{StepCall::Norm,
                         Primitive::AllReduce,
                         1,
                         DType::F32,
                         -1,
                         0,
                         "gradient norm: this rank's sum of squares over the model-parallel "
                         "group (a tensor held on several of its ranks counted once)"};

// One element all-reduced over the group (a U8 all-reduce takes the maximum).
template <typename T>
T all_reduce_one(T x, const StepCall& call, Communicator& group, Ops& ops) {
  void* dev = ops.alloc(sizeof(T), MemCategory::CommBuffers);
  ops.from_host(dev, &x, sizeof(T));
  group.purpose(Purpose::Scalars);
  group.all_reduce(dev, call.count, call.dtype)->wait();
  ops.to_host(&x, dev, sizeof(T));
  ops.release(dev);
  return x;
}

}  // namespace

ModelParallelNorm tensor_parallel_norm(const ParamTable& shard, Communicator& tensor) {
  return grid_parallel_norm(shard, &tensor, nullptr);
}

ModelParallelNorm grid_parallel_norm(const ParamTable& part, Communicator* tensor,
                                     Communicator* pipeline) {
  ModelParallelNorm mp;
  if (tensor) mp.groups.push_back(tensor);
  if (pipeline) mp.groups.push_back(pipeline);
  const bool tied_copy = pipeline && part.has_head() && !part.has_embeddings();
  for (size_t i = 0; i < part.params().size(); i++) {
    const ParamInfo& p = part.params()[i];
    const bool duplicate = tensor && p.cut == ShardCut::Whole && part.split().index != 0;
    mp.counts.push_back(!duplicate && !(tied_copy && i == 0));
  }
  return mp;
}

std::vector<OptimPiece> mark_norm_pieces(std::vector<OptimPiece> pieces, const ParamTable& table,
                                         const ModelParallelNorm& mp) {
  if (mp.counts.empty()) return pieces;
  const std::vector<ParamInfo>& params = table.params();
  for (OptimPiece& piece : pieces) {
    // The last tensor starting at or before the piece holds it (offsets ascend).
    const auto after =
        std::upper_bound(params.begin(), params.end(), piece.flat_begin,
                         [](size_t at, const ParamInfo& p) { return at < p.offset; });
    piece.in_norm = mp.counts[static_cast<size_t>(after - params.begin()) - 1];
  }
  return pieces;
}

double model_parallel_norm(double squares, const ModelParallelNorm& mp, Ops& ops) {
  if (mp.groups.empty()) return std::sqrt(squares);
  float sum = static_cast<float>(squares);
  for (Communicator* g : mp.groups) sum = all_reduce_one(sum, kNormCall, *g, ops);
  return std::sqrt(static_cast<double>(sum));
}

bool model_parallel_overflow(bool overflowed, const ModelParallelNorm& mp, Ops& ops) {
  uint8_t flag = overflowed;
  for (Communicator* g : mp.groups) flag = all_reduce_one(flag, kOverflowCall, *g, ops);
  return flag != 0;
}

std::vector<StepCall> model_parallel_step_calls(bool overflow_check) {
  if (overflow_check) return {kOverflowCall, kNormCall};
  return {kNormCall};
}

}  // namespace zt
