// Memory per rank over the grid W = DP x TP x PP (issue 22): model states of
// a rank's local parameters (grid_volume.h stage_local_numel) under ZeRO over
// the data-parallel group, and activations per Korthikanti et al.
//
// Model states (zerotrain's, from the ZeRO paper's per-stage split,
// memory_formula.h model_states_bytes): bf16 parameters 2 and gradients 2
// bytes, fp32 master and Adam moments K = 12 bytes per local parameter;
// stage 1 divides K by D, stage 2 gradients and K, stage 3 all three.
//
// Activations per block, the paper's (Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models", 2022, Table 2: 16-bit
// activations, 1-byte dropout masks, a heads, s sequence, b micro-batch,
// h hidden, t tensor ranks):
//   no tensor parallelism:            s·b·h·(34 + 5·a·s/h)
//   tensor parallelism:               s·b·h·(10 + 24/t + 5·a·s/(h·t))
//   tensor + sequence parallelism:    s·b·h·(34/t + 5·a·s/(h·t))
// A stage's activations (zerotrain's): that times the stage's blocks times the
// micro-batches in flight on it: GPipe keeps all m; 1F1B keeps min(P - stage, m)
// on stage `stage` (Narayanan et al. 2021: stage 0 holds P).
#pragma once
#include <cstdint>

#include "model/gpt_config.h"
#include "zero/analysis/grid_volume.h"

namespace zt {

// Model-state bytes per rank of pipeline stage `stage` at ZeRO stage
// zero_stage over the D data-parallel ranks (no padding: the closed form).
uint64_t grid_model_states_bytes(int zero_stage, const GridShape& g, const GPTConfig& c, int stage);

// The paper's activation bytes of one block for one micro-batch (Table 2);
// tp and sequence_parallel from g (T = 1: the first row whatever it says).
double block_activation_bytes(const GridShape& g, const GPTConfig& c);

// Micro-batches whose activations `stage` holds at once.
int micro_batches_in_flight(PipelineSchedule schedule, const GridShape& g, int stage);

// A stage's activation bytes per rank at its peak: blocks x in flight x block.
double stage_activation_bytes(PipelineSchedule schedule, const GridShape& g, const GPTConfig& c,
                              int stage);

}  // namespace zt
