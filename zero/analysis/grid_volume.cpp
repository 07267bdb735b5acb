#include "zero/analysis/grid_volume.h"

#include <stdexcept>

#include "zero/comm/comm_stats.h"

namespace zt {

namespace {

void need(bool ok, const std::string& line) {
  if (!ok) throw std::invalid_argument(line);
}

std::string n(int v) { return std::to_string(v); }

// `calls` calls of `count` elements each (the buffer of an all-reduce, the
// input per rank of an all-gather, the input of a reduce-scatter), over a
// group of `ranks`.
VolumeTerm term(std::string what, GridCall k, DType t, uint64_t calls, uint64_t count, int ranks) {
  VolumeTerm v;
  v.what = std::move(what);
  v.call = k;
  v.dtype = t;
  v.calls = calls;
  const uint64_t per_call = k == GridCall::AllGather ? count * ranks : count;
  v.payload_bytes = static_cast<double>(calls) * per_call * dtype_size(t);
  switch (k) {
    case GridCall::AllReduce:
      v.bus_bytes = v.payload_bytes * bus_factor(Primitive::AllReduce, ranks);
      break;
    case GridCall::AllGather:
      v.bus_bytes = v.payload_bytes * bus_factor(Primitive::AllGather, ranks);
      break;
    case GridCall::ReduceScatter:
      v.bus_bytes = v.payload_bytes * bus_factor(Primitive::ReduceScatter, ranks);
      break;
    case GridCall::Send: v.bus_bytes = v.payload_bytes; break;
  }
  return v;
}

VolumeTerm message(std::string what, DType t, uint64_t calls, uint64_t count) {
  return term(std::move(what), GridCall::Send, t, calls, count, 2);
}

}  // namespace

void check_grid(const GridShape& g, const GPTConfig& c) {
  need(g.dp >= 1, "parallel: data-parallel size " + n(g.dp) + " must be at least 1");
  need(g.tp >= 1, "parallel.tensor: " + n(g.tp) + " must be at least 1");
  need(g.pp >= 1, "parallel.pipeline: " + n(g.pp) + " must be at least 1");
  need(g.micro_batches >= 1, "micro-batches per step: " + n(g.micro_batches) + " must be >= 1");
  need(g.micro_batch >= 1, "micro-batch: " + n(g.micro_batch) + " must be at least 1");
  need(g.seq >= 1 && g.seq <= c.seq_len,
       "sequence: " + n(g.seq) + " must be in [1, " + n(c.seq_len) + "] (model seq_len)");
  need(c.n_head % g.tp == 0,
       "parallel.tensor: " + n(g.tp) + " does not divide model.n_head " + n(c.n_head));
  need(c.vocab_size % g.tp == 0,
       "parallel.tensor: " + n(g.tp) + " does not divide the padded vocabulary " + n(c.vocab_size));
  need(g.pp <= c.n_layer,
       "parallel.pipeline: " + n(g.pp) + " is above model.n_layer " + n(c.n_layer));
  need(!g.sequence_parallel || g.seq % g.tp == 0,
       "parallel.sequence_parallel: sequence " + n(g.seq) +
           " is not a multiple of parallel.tensor " + n(g.tp));
}

StageBlocks stage_blocks(int L, int P, int stage) {
  need(P >= 1 && P <= L, "parallel.pipeline: " + n(P) + " must be in [1, " + n(L) + "]");
  need(stage >= 0 && stage < P, "pipeline stage " + n(stage) + " is outside [0, " + n(P) + ")");
  return split_blocks(L, P)[static_cast<size_t>(stage)];
}

uint64_t GridVolume::calls() const {
  uint64_t k = 0;
  for (const VolumeTerm& t : terms) k += t.calls;
  return k;
}

double GridVolume::payload_bytes() const {
  double s = 0;
  for (const VolumeTerm& t : terms) s += t.payload_bytes;
  return s;
}

double GridVolume::bus_bytes() const {
  double s = 0;
  for (const VolumeTerm& t : terms) s += t.bus_bytes;
  return s;
}

double GridVolume::bus_bytes(GridCall k) const {
  double s = 0;
  for (const VolumeTerm& t : terms)
    if (t.call == k) s += t.bus_bytes;
  return s;
}

GridVolume tensor_volume(const GridShape& g, const GPTConfig& c, DType model, Recompute recompute,
                         int stage) {
  check_grid(g, c);
  const StageBlocks blocks = stage_blocks(c.n_layer, g.pp, stage);
  GridVolume v;
  const int T = g.tp;
  if (T == 1) return v;
  const bool first = stage == 0, last = stage == g.pp - 1;
  const uint64_t m = g.micro_batches, N = g.tokens(), NC = N * c.n_embd;
  const uint64_t per_block = m * blocks.count;
  // Each all-reduce of N·C; under sequence parallelism an all-gather of the
  // sequence shard (N·C/T per rank) and a reduce-scatter of N·C.
  auto activation_reduce = [&](const std::string& what, uint64_t calls) {
    if (calls == 0) return;
    if (!g.sequence_parallel) {
      v.terms.push_back(term(what, GridCall::AllReduce, model, calls, NC, T));
      return;
    }
    v.terms.push_back(
        term(what + ", all-gather half", GridCall::AllGather, model, calls, NC / T, T));
    v.terms.push_back(
        term(what + ", reduce-scatter half", GridCall::ReduceScatter, model, calls, NC, T));
  };
  if (first) activation_reduce("forward: vocabulary-parallel embedding output", m);
  activation_reduce("forward: attention and MLP projections (2 per block)", 2 * per_block);
  if (last) {
    v.terms.push_back(term("forward: cross-entropy log-sum-exp per rank", GridCall::AllGather,
                           DType::F32, m, N, T));
    v.terms.push_back(
        term("forward: cross-entropy target logit", GridCall::AllReduce, DType::F32, m, N, T));
    activation_reduce("backward: LM head input gradient", m);
  }
  activation_reduce("backward: QKV and MLP-up input gradients (2 per block)", 2 * per_block);
  if (recompute == Recompute::Block && !g.sequence_parallel)
    activation_reduce("recompute: attention projection (1 per block)", per_block);
  if (g.sequence_parallel && last)
    v.terms.push_back(
        term("backward: sequence all-gather of ln_f's kept output (the LM head's input)",
             GridCall::AllGather, model, m, NC / T, T));
  if (g.sequence_parallel && per_block > 0) {
    // A block LayerNorm's output is kept for the rank's rows alone, so the
    // weight gradient of the projection after it gathers it again.
    v.terms.push_back(term("backward: sequence all-gather of a kept LayerNorm output (2 per block)",
                           GridCall::AllGather, model, 2 * per_block, NC / T, T));
    // The re-run forward gathers again each LayerNorm output it reads: ln_1's
    // (attn, block) and ln_2's (mlp, block).
    const uint64_t gathers = recompute == Recompute::Block  ? 2
                             : recompute == Recompute::None ? 0
                                                            : 1;
    if (gathers > 0)
      v.terms.push_back(term("recompute: sequence all-gather before a column-parallel layer",
                             GridCall::AllGather, model, gathers * per_block, NC / T, T));
    if (recompute == Recompute::Block)
      v.terms.push_back(term("recompute: after the attention projection (1 per block)",
                             GridCall::ReduceScatter, model, per_block, NC, T));
  }
  // The gradient norm: each rank's fp32 sum of squares, once a step.
  v.terms.push_back(term("step: gradient norm's sum of squares (fp32)", GridCall::AllReduce,
                         DType::F32, 1, 1, T));
  if (g.sequence_parallel) {
    // Each LayerNorm's weight and bias gradients (2C), from the shard's rows:
    // 2 per block and ln_f's, once per micro-batch.
    const uint64_t layernorms = 2 * blocks.count + (last ? 1 : 0);
    v.terms.push_back(term("backward: LayerNorm gradients of the sequence shard",
                           GridCall::AllReduce, model, m * layernorms, 2 * c.n_embd, T));
  }
  return v;
}

GridVolume pipeline_volume(const GridShape& g, const GPTConfig& c, DType model, int stage) {
  check_grid(g, c);
  stage_blocks(c.n_layer, g.pp, stage);  // throws for a stage outside [0, P)
  GridVolume v;
  if (g.pp == 1) return v;
  const bool first = stage == 0, last = stage == g.pp - 1;
  const uint64_t m = g.micro_batches;
  const uint64_t count = g.tokens() * c.n_embd / (g.sequence_parallel ? g.tp : 1);
  if (!last) v.terms.push_back(message("forward: activations to the next stage", model, m, count));
  if (!first)
    v.terms.push_back(message("backward: gradients to the previous stage", model, m, count));
  if (first || last) {
    const uint64_t wte = static_cast<uint64_t>(c.vocab_size) / g.tp * c.n_embd;
    v.terms.push_back(term("step: tied embedding gradient (first and last stage)",
                           GridCall::AllReduce, model, 1, wte, 2));
  }
  return v;
}

uint64_t block_local_numel(const GPTConfig& c, int tp) {
  const uint64_t C = c.n_embd, T = tp;
  return 12 * C * C / T + 7 * C / T + 6 * C;
}

uint64_t stage_local_numel(const GridShape& g, const GPTConfig& c, int stage) {
  check_grid(g, c);
  const StageBlocks blocks = stage_blocks(c.n_layer, g.pp, stage);
  const uint64_t C = c.n_embd;
  const uint64_t wte = static_cast<uint64_t>(c.vocab_size) / g.tp * C;
  uint64_t sum = blocks.count * block_local_numel(c, g.tp);
  if (stage == 0) sum += wte + static_cast<uint64_t>(c.seq_len) * C;
  if (stage == g.pp - 1) sum += 2 * C + (g.pp > 1 ? wte : 0);
  return sum;
}

PaperVolume data_volume(int zero_stage, const GridShape& g, const GPTConfig& c, DType model,
                        int stage) {
  return paper_volume(zero_stage, stage_local_numel(g, c, stage), g.micro_batches, model);
}

uint64_t stage3_gathered_elements(uint64_t psi_partitioned, int micro_batches) {
  return 2 * static_cast<uint64_t>(micro_batches) * psi_partitioned;
}

int gradient_reductions_per_step(int zero_stage, int micro_batches) {
  need(zero_stage >= 0 && zero_stage <= 3, "zero.stage: " + n(zero_stage) + " must be 0-3");
  return zero_stage >= 2 ? micro_batches : 1;
}

RankGroup tensor_group(const GridShape& g, RankOrder order) {
  return Grid{g.dp, g.tp, g.pp, order}.tensor_group();
}

RankGroup data_group(const GridShape& g, RankOrder order) {
  return Grid{g.dp, g.tp, g.pp, order}.data_group();
}

RankGroup pipeline_group(const GridShape& g, RankOrder order) {
  return Grid{g.dp, g.tp, g.pp, order}.pipeline_group();
}

double inter_node_tensor_bytes(double tensor_bus_bytes, const GridShape& g, int ranks_per_node,
                               RankOrder order) {
  need(ranks_per_node >= 1, "ranks per node: " + n(ranks_per_node) + " must be at least 1");
  const NodeMap nodes = NodeMap::uniform(g.world(), ranks_per_node);
  return tensor_bus_bytes *
         nodes.group_inter_node_share(Primitive::AllReduce, tensor_group(g, order));
}

double bubble_fraction(int pp, int m) {
  need(pp >= 1 && m >= 1,
       "bubble: pipeline " + n(pp) + " and micro-batches " + n(m) + " must be at least 1");
  return static_cast<double>(pp - 1) / (m + pp - 1);
}

}  // namespace zt
