#include "zero/analysis/tensor_plan.h"

#include "zero/grid/tensor_parallel_hooks.h"
#include "zero/stages/model_parallel_norm.h"

namespace zt {
namespace {

const char* combine_name(Combine what) {
  switch (what) {
    case Combine::Sum: return "sum";
    case Combine::SumFloats: return "sum of fp32 rows";
    case Combine::LogSumExp: return "log-sum-exp of the vocabulary shards";
    case Combine::GatherRows: return "sequence shards gathered";
    case Combine::ScatterSum: return "sum scattered to the sequence shards";
    case Combine::SumLayerNormGrads: return "LayerNorm gradients summed over the sequence shards";
  }
  return "";
}

// Whether `module`'s weight keeps its shard's output rows (a column-parallel
// layer, whose backward gathers its input under sequence parallelism).
bool keeps_output_rows(const ParamTable& shard, int module) {
  const std::vector<int>& params = shard.modules()[module].params;
  if (params.empty()) return false;
  const ShardCut cut = shard.params()[params[0]].cut;
  return cut == ShardCut::Rows || cut == ShardCut::QkvRows;
}

}  // namespace

std::vector<PlannedCall> plan_tensor_calls(const std::vector<CombinePoint>& points,
                                           const ParamTable& shard, int micro_steps, size_t tokens,
                                           DType model, bool overflow_check) {
  std::vector<PlannedCall> calls;
  for (int micro = 0; micro < micro_steps; micro++)
    for (const CombinePoint& p : points) {
      const TensorCall call = tensor_call(p.what, model);
      PlannedCall c;
      c.phase = p.backward ? Phase::Backward : Phase::Forward;
      c.micro = micro;
      c.purpose = Purpose::Activations;
      c.primitive = call.primitive;
      c.dtype = call.dtype;
      c.count = p.count(tokens, shard.config().n_embd);
      if (call.shard_part) c.count /= shard.split().degree;
      c.root = -1;
      const std::string& module = shard.modules()[p.module].name;
      const bool gathered_input =
          p.backward && p.what == Combine::GatherRows && keeps_output_rows(shard, p.module);
      const char* of = !p.backward                            ? " output, "
                       : gathered_input                       ? " input (a kept LayerNorm output), "
                       : p.what == Combine::GatherRows        ? " output gradient, "
                       : p.what == Combine::SumLayerNormGrads ? " weight gradients, "
                                                              : " input gradient, ";
      c.what = std::string("tensor: ") + module + of + combine_name(p.what);
      calls.push_back(c);
    }
  for (const StepCall& s : model_parallel_step_calls(overflow_check)) {
    PlannedCall c;
    c.phase = Phase::Step;
    c.micro = micro_steps - 1;
    c.purpose = Purpose::Scalars;
    c.primitive = s.primitive;
    c.dtype = s.dtype;
    c.count = s.count;
    c.root = -1;
    c.what = "tensor: " + s.what;
    calls.push_back(c);
  }
  return calls;
}

}  // namespace zt
