// The step-time model over the 3-D grid W = DP x TP x PP (issue 22): the
// predicted time of one optimizer step of a GPT-shaped model on a cluster of
// published figures, from the closed forms of grid_volume.h and grid_memory.h.
// Model output, not a measurement; docs/grid_projection.md states the model
// and reads its tables.
//
// Compute. Floating-point operations per token, forward and backward
// (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
// GPU Clusters", Appendix: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) per batch,
// no recomputation): per block 72·C² (6 x its 12·C² matrix parameters) plus
// 12·S·C (the attention scores and their weighted sum, 4·S·C forward and
// twice that backward), and 6·V·C for the tied LM head on the last stage;
// a tensor rank does 1/T of it. Time = FLOPs / the GPU's achieved rate (an
// assumption: a preset's effective rate, the same at every T and size).
// Forward takes 1/3 of a micro-batch, backward 2/3 (step_time_model.h).
//
// Tensor parallelism: the calls of tensor_volume (Megatron-LM, no sequence
// parallelism, no recompute) on the critical path, none hidden: each all-
// reduce waits for the matrix product before it and gates the one after.
// Each call is timed alone by step_time_model's link rule over the tensor
// group (tensor innermost: ranks t + T·(d + D·p), so T <= G stays in a node),
// or, where the cluster carries curves measured over its tensor groups
// (commbench --group-size T: every group calling at once), by those curves.
//
// Pipeline (1F1B, or GPipe where the run says so; flushed every step): the
// makespan of pipeline_simulator's run of the schedule with the slowest
// stage's forward and backward on every stage, and each boundary's own
// message time, a link carrying one message at a time in each direction.
// With no message time it is (m + P - 1)·(t_f + t_b), bubble
// (P - 1)/(m + P - 1). A message of N·C elements goes at the intra-node rate
// when every rank of the stage and its peer share a node, else at the node
// link, shared by the ranks of the busiest node whose peers are on another.
// The tied embedding's gradient is all-reduced between the first and last
// stage after the flush.
//
// ZeRO over the D data-parallel ranks of each (tensor, pipeline) coordinate,
// Ψ_s = the stage's local parameters (stage_local_numel), bf16, overlap_comm
// on, each call timed alone over the data group (by the link rule, or by
// curves measured over the data groups where the cluster carries them),
// hidden only behind the
// compute of the pass that issues it (not behind the tensor all-reduces,
// which share the rank's links). The gradients' call at stages 1-3 is the
// run's (GridRun::gradient_reduce): the ZeRO paper's reduce-scatter of Ψ_s
// (the default), an all-reduce of Ψ_s (DeepSpeed's default path at stages 1
// and 2), or D rooted reduces of Ψ_s/D one after another (per-owner):
//   stage 0: one all-reduce of Ψ_s after the flush, exposed;
//   stage 1: the gradients' call in the stage's last backward (the part
//            longer than that backward's compute exposed), an all-gather of
//            the updated parameters after the optimizer, exposed;
//   stage 2: the gradients' call in every backward (the part longer than
//            its compute stalls that backward), the same all-gather;
//   stage 3: an all-gather of Ψ_s in every forward and one more with the
//            gradients' call in every backward (each pass stalled by what
//            exceeds its compute), no gather after the step.
// Optimizer: AdamW over the rank's state (Ψ_s, or Ψ_s/D at stages 1-3), 32
// bytes per element (fp32 master, m, v and gradient read and written) at the
// device memory bandwidth; run after the flush, nothing hidden.
//
// Memory: grid_memory's model states plus 1F1B's activations (Korthikanti et
// al., attention scores stored, i.e. no FlashAttention), the largest over the
// stages; no workspace, communication buffers, fragmentation or stage 3's
// gathered parameters: the mark "fits" is optimistic.
#pragma once
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "zero/analysis/grid_volume.h"
#include "zero/analysis/step_time_model.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {

// A cluster of `nodes` x `gpus_per_node` GPUs and what the model assumes of it.
struct GridCluster {
  int nodes = 1, gpus_per_node = 1;
  LinkFigures link;
  double flops_per_s = 0;          // achieved per GPU on the model's matrix products
  double memory_bytes_per_s = 0;   // device memory bandwidth (the optimizer)
  double device_memory_bytes = 0;  // per GPU
  // Measured over every tensor group at once (commbench --group-size T), and
  // over every data-parallel group at once (--group-size D --group-stride T);
  // empty: the link rule.
  std::vector<CallCurve> tensor_curves, data_curves;
  int world() const { return nodes * gpus_per_node; }
};

// One configuration: the grid (dp x tp x pp = the cluster's world, m, B, S),
// the ZeRO stage over its data-parallel groups, the pipeline's schedule, and
// the dtype its activations and gradients travel in (bf16 on GPUs; fp32 on
// the CPU backend). Memory is bf16 mixed precision whatever it says.
struct GridRun {
  GridShape grid;
  int zero_stage = 0;
  // The gradients' call at stages 1-3: ReduceScatter, AllReduce or Reduce.
  Primitive gradient_reduce = Primitive::ReduceScatter;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  DType dtype = DType::BF16;
};

// The predicted step and its parts, which add up to it: compute (the critical
// stage's forwards and backwards and the optimizer), the bubble (the rest of
// the makespan: fill, drain and stages slower than the critical one), the
// tensor all-reduces, the pipeline's messages on the critical path with the
// tied embedding's all-reduce, and the data-parallel time not hidden.
struct GridStepPrediction {
  double step_s = 0;
  double compute_s = 0, optimizer_s = 0;  // optimizer_s is within compute_s
  double bubble_s = 0, tensor_s = 0, pipeline_s = 0, data_exposed_s = 0;
  double tokens_per_s = 0;
  double memory_bytes = 0;  // per GPU, the largest stage's
  bool fits = false;
  // DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3 (P > 1):
  // pipeline_engine_accepts_zero_stage at the newest verified release.
  bool deepspeed_refuses = false;
};

// Forward-and-backward FLOPs per token on one tensor rank of pipeline stage `stage`.
double stage_flops_per_token(const GPTConfig& c, const GridShape& g, int stage);

// Seconds of one call over `group` (every group of that shape at once) on the
// cluster's link figures: `count` elements per the Communicator's convention
// (an all-gather's and a reduce-scatter's per-rank shard).
double grid_call_seconds(const GridCluster& k, Primitive p, DType t, uint64_t count,
                         const RankGroup& group);

// Seconds of one pipeline message of `bytes` across `boundary` (stages
// boundary and boundary + 1): at the intra-node rate, or at the node link
// shared by that node's ranks whose peers are on another node.
double pipeline_message_seconds(const GridCluster& k, const GridShape& g, double bytes,
                                int boundary);

// The prediction; throws std::invalid_argument (one line) when the grid does
// not cover the cluster's world or cannot split the model (check_grid).
GridStepPrediction predict_grid_step(const GPTConfig& c, const GridRun& r, const GridCluster& k);

}  // namespace zt
