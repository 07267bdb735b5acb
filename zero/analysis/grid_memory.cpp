#include "zero/analysis/grid_memory.h"

#include <algorithm>

#include "zero/analysis/memory_formula.h"

namespace zt {

uint64_t grid_model_states_bytes(int zero_stage, const GridShape& g, const GPTConfig& c,
                                 int stage) {
  const int kBf16Params = 2, kBf16Grads = 2;
  return model_states_bytes(zero_stage, stage_local_numel(g, c, stage), g.dp, kBf16Params,
                            kBf16Grads);
}

double block_activation_bytes(const GridShape& g, const GPTConfig& c) {
  const double s = g.seq, b = g.micro_batch, h = c.n_embd, a = c.n_head, t = g.tp;
  const double attention_scores = 5 * a * s / h;
  if (g.tp == 1) return s * b * h * (34 + attention_scores);
  if (!g.sequence_parallel) return s * b * h * (10 + 24 / t + attention_scores / t);
  return s * b * h * (34 / t + attention_scores / t);
}

int micro_batches_in_flight(PipelineSchedule schedule, const GridShape& g, int stage) {
  if (schedule == PipelineSchedule::GPipe) return g.micro_batches;
  return std::min(g.pp - stage, g.micro_batches);
}

double stage_activation_bytes(PipelineSchedule schedule, const GridShape& g, const GPTConfig& c,
                              int stage) {
  check_grid(g, c);
  const StageBlocks blocks = stage_blocks(c.n_layer, g.pp, stage);
  return blocks.count * micro_batches_in_flight(schedule, g, stage) * block_activation_bytes(g, c);
}

}  // namespace zt
