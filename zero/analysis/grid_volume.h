// Closed forms for the 3-D grid, W = DP x TP x PP (issue 22): the bytes each
// rank moves per optimizer step in each dimension, written from the papers
// and from the call list zerotrain's tensor- and pipeline-parallel runs issue,
// so that plan and the measured ledger can be checked against numbers derived
// by hand. docs/parallel_grid.md ("Closed forms") states every formula.
//
// Notation: D = dp, T = tp, P = pp, m micro-batches per step (the accumulation
// steps), B micro-batch, S sequence, N = B·S tokens of a micro-batch, C = n_embd,
// V = vocab rows, L = n_layer, e = bytes of the model dtype. Bus bytes follow
// nccl-tests (zero/comm/comm_stats.h bus_factor): all-reduce 2(T-1)/T of its
// buffer, all-gather and reduce-scatter (T-1)/T of the whole (gathered output,
// scattered input), point-to-point 1.
//
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019), per micro-batch on
// the stage that holds the piece named, T > 1, no sequence parallelism:
//   forward:  1 all-reduce of N·C (vocabulary-parallel embedding output; first
//             stage), 2 per block (after the row-parallel attention and MLP
//             projections), and for the vocabulary-parallel cross-entropy
//             (last stage) 1 all-gather of N fp32 per rank (each rank's
//             log-sum-exp) and 1 all-reduce of N fp32 (the target's logit);
//   backward: 1 all-reduce of N·C (the LM head's input gradient; last stage)
//             and 2 per block (input gradients of the column-parallel QKV and
//             MLP-up projections);
//   recompute `block` re-runs each block's forward up to c_fc's GELU, so its
//             attention projection's all-reduce again: +1 per block;
//             `attn` and `mlp` re-run no row-parallel projection: +0;
//   step:     1 all-reduce of 1 fp32 element, each rank's sum of squares of
//             the gradient norm (whole tensors counted on tensor rank 0;
//             zero/stages/model_parallel_norm.h). DeepSpeed releases whose
//             ZeRO step checks for overflow sync that uint8 flag over the
//             group too (+1 call of 1 byte; not in this closed form).
// Sequence parallelism (Korthikanti et al. 2022, as model/gpt.h runs it):
// each all-reduce of N·C above becomes one all-gather and one reduce-scatter
// of N·C (same bus bytes, twice the payload); recompute `block` re-runs the
// all-gather of ln_1's output, the reduce-scatter after the attention
// projection and the all-gather of ln_2's, `attn` the all-gather of ln_1's,
// `mlp` the all-gather of ln_2's; each LayerNorm's weight and
// bias gradients come from the shard's rows and are all-reduced (2C) over
// the tensor group once per micro-batch, before ZeRO takes them (2 per block
// and ln_f's). A block LayerNorm's output is kept for the shard's rows
// alone and gathered again in the backward for the weight gradient of the
// column-parallel layer after it, as Megatron-LM does: 2 more all-gathers
// of N·C/T per rank per block. The projections' biases enter before the
// reduce-scatter, on shard 0, so their gradients come from the gathered
// output gradient, whole on every shard (Megatron-LM adds them after it and
// all-reduces their gradients with the LayerNorms').
//
// Pipeline (Megatron-LM, Narayanan et al. 2021): per micro-batch and stage
// boundary, one activation message of N·C forward and one gradient message of
// N·C backward (N·C/T each under sequence parallelism); with P > 1 the tied
// embedding's gradient (V/T·C elements) is all-reduced between the first and
// last stage once per step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "model/ops.h"
#include "model/recompute.h"
#include "zero/analysis/paper_volume.h"
#include "zero/comm/communicator.h"
#include "zero/grid/grid.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {

struct GridShape {
  int dp = 1, tp = 1, pp = 1;
  int micro_batches = 1;  // m: micro-batches per optimizer step
  int micro_batch = 1;    // B
  int seq = 1;            // S
  bool sequence_parallel = false;
  int world() const { return dp * tp * pp; }
  uint64_t tokens() const { return static_cast<uint64_t>(micro_batch) * seq; }  // N
};

// Throws std::invalid_argument, one line naming the key, where the grid cannot
// split the model: T not dividing n_head or the vocabulary rows, P above the
// layer count, a size or m below 1, a sequence above the model's.
void check_grid(const GridShape& g, const GPTConfig& c);

// The blocks of pipeline stage `stage`: split_blocks' split
// (zero/grid/pipeline_schedule.h: L/P each and one more on each of the first
// L mod P stages, as DeepSpeed's partition_uniform in deepspeed/runtime/utils.py;
// Megatron requires P | L).
StageBlocks stage_blocks(int n_layer, int pp, int stage);

// What a volume term moves by: a collective over a group, or point-to-point
// messages (one send per message, its bytes counted once).
enum class GridCall { AllReduce, AllGather, ReduceScatter, Send };

// One line of a volume: `calls` collectives or messages of one kind.
struct VolumeTerm {
  std::string what;  // "forward: attention and MLP projections (2 per block)"
  GridCall call = GridCall::AllReduce;
  DType dtype = DType::F32;
  uint64_t calls = 0;
  double payload_bytes = 0;  // all calls, nccl-tests' payload
  double bus_bytes = 0;      // all calls
};
struct GridVolume {
  std::vector<VolumeTerm> terms;
  uint64_t calls() const;
  double payload_bytes() const;
  double bus_bytes() const;
  double bus_bytes(GridCall k) const;
};

// Tensor-group volume of one rank of pipeline stage `stage` per optimizer step
// (every tensor rank moves the same). Empty at T = 1.
GridVolume tensor_volume(const GridShape& g, const GPTConfig& c, DType model, Recompute recompute,
                         int stage);

// Pipeline volume one rank of `stage` sends per step (point-to-point
// messages: activations forward, gradients backward; the tied embedding's
// gradient all-reduce over the first and last stage). Empty at P = 1.
GridVolume pipeline_volume(const GridShape& g, const GPTConfig& c, DType model, int stage);

// Parameters one tensor rank holds (Megatron's split): per block
// 12C²/T + 7C/T + 6C (QKV and MLP-up weights and biases split by T, the two
// projections' weights split on their input dimension, their biases and the
// LayerNorms whole); wte V·C/T, wpe S_max·C and ln_f 2C whole.
uint64_t block_local_numel(const GPTConfig& c, int tp);
// Of pipeline stage `stage`: its blocks; the embeddings on the first; ln_f on
// the last, and with P > 1 the last stage's own copy of wte for the tied head.
uint64_t stage_local_numel(const GridShape& g, const GPTConfig& c, int stage);

// ZeRO over the data-parallel group of one (tensor, pipeline) coordinate: the
// paper's volume (paper_volume.h) with Ψ = stage_local_numel and A = m.
PaperVolume data_volume(int zero_stage, const GridShape& g, const GPTConfig& c, DType model,
                        int stage);

// Interference. ZeRO-3 under a pipeline: every micro-batch's forward and
// backward gather the stage's partitioned parameters, 2·m·Ψ_partitioned
// elements per step (the paper's schedule: each use gathers); one micro-batch
// without a pipeline gathers 2Ψ. This is the bound a release-after-use
// schedule reaches; DeepSpeed's coordinator keeps a tensor gathered while the
// trace reuses it within stage3_max_reuse_distance elements, and the
// embeddings stay gathered until the step, so its exact count is plan_step's.
uint64_t stage3_gathered_elements(uint64_t psi_partitioned, int micro_batches);

// Gradient reductions over the data-parallel group per step with m micro-
// steps: stages 0 and 1 reduce once, at the accumulation boundary (stage 1
// with overlap_comm in the last micro-step's backward); stages 2 and 3 in
// every backward, m times (ZERO_SEMANTICS.md).
int gradient_reductions_per_step(int zero_stage, int micro_batches);

// The groups of the grid's rank order (zero/grid/grid.h).
RankGroup tensor_group(const GridShape& g, RankOrder order);
RankGroup data_group(const GridShape& g, RankOrder order);
RankGroup pipeline_group(const GridShape& g, RankOrder order);

// The part of `tensor_bus_bytes` (a rank's tensor-group bus bytes) that
// crosses nodes with G ranks per node, under comm_stats.h's ring rule,
// averaged over the ranks of the world.
double inter_node_tensor_bytes(double tensor_bus_bytes, const GridShape& g, int ranks_per_node,
                               RankOrder order);

// The pipeline's idle share of a step: (P-1)/(m+P-1) (GPipe and 1F1B alike).
double bubble_fraction(int pp, int micro_batches);

}  // namespace zt
