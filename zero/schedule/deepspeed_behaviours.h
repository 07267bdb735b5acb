// What a DeepSpeed release does with a ZeRO config, as named behaviours: the
// one place a release number (zero.deepspeed_version) is turned into the
// choices the schedule makes. Everything else reads these flags; nothing
// compares release numbers itself.
//
// Each flag names the release where it changed, as measured by the traces of
// tests/reference/deepspeed/RELEASES.md (W = 4 CPU ranks, every collective
// recorded) and read in DeepSpeed's source. Releases before the oldest traced
// one or after the newest are refused: nothing says what they do.
#pragma once
#include <string>

#include "model/ops.h"
#include "zero/deepspeed_release.h"
#include "zero/zero_config.h"

namespace zt {

// The releases zerotrain emulates: the oldest and newest traced call for call.
constexpr DeepSpeedRelease kOldestVerifiedRelease{0, 10, 3};
constexpr DeepSpeedRelease kNewestVerifiedRelease{0, 19, 8};

struct DeepSpeedBehaviours {
  DeepSpeedRelease release;
  // 0.12.4: zero_optimization gains use_multi_rank_bucket_allreduce (default
  // true). Before it, stage 1/2's reduce_scatter path issues one rooted reduce
  // per owner slice of the bucket, in bucket order (average_tensor ->
  // dist.reduce); from it, the default all-reduces the owners' slices together.
  bool has_multi_rank_bucket_allreduce = true;
  // 0.13.0: use_multi_rank_bucket_allreduce: false reduces to each owner. In
  // 0.12.4-0.12.6 allreduce_bucket sets `rank = None`, so the per-owner calls
  // are all-reduces (same counts, no root).
  bool per_owner_path_reduces = true;
  // 0.13.0: the engine stops forcing overlap_comm, round_robin_gradients and
  // contiguous_gradients off for stage 1 (_configure_zero_optimizer).
  bool stage1_forces_switches_off = false;
  // 0.14.1: reduce_scatter: false all-reduces only the filled part of the
  // bucket; before, the whole buffer of reduce_bucket_size elements
  // (reduce_ipg_grads passes the buffer unnarrowed).
  bool allreduce_path_sends_whole_buffer = false;
  // 0.14.5 (traced: 0.14.4 issues it, 0.19.8 does not; source: 0.14.5's
  // gradient_reduction_w_predivide returns early on an empty tensor): before,
  // reduce_scatter: false all-reduces an empty bucket too, a 0-element call
  // when the first tensor to arrive exceeds the bucket (stage 1's order).
  bool allreduce_path_reduces_empty_bucket = false;
  // 0.19.4 (traced on s3_default_b1e4: bias first on 0.19.3 and every
  // release before, weight first on 0.19.4 and 0.19.8; 0.15.4 on torch 2.7.1
  // bias first, so it is DeepSpeed's change, not torch's): stage 3's hooks see
  // each Linear's weight gradient before its bias's (stage3_hook_order.h).
  bool stage3_linear_weight_grad_first = true;
  // The overflow check (one uint8 all-reduce in the step): fp32 and bf16
  // issue it at stages 1-3 up to 0.11.1 (0.11.2 checks only fp16); bf16 again
  // from 0.19.3 at stages 1/2 only (bf16.check_grad_overflow defaults to true
  // and reaches DeepSpeedZeroOptimizer; stage 3 still checks fp16 only).
  bool overflow_check_fp32 = false;
  bool overflow_check_bf16 = false;
  bool overflow_check_bf16_stages12 = false;
  // 0.17.1 (DeepSpeed PR 6976; read in 0.17.5's and 0.19.8's source): the
  // bf16 block gains check_grad_overflow, which the engine hands to
  // DeepSpeedZeroOptimizer (stages 1/2) when bf16 is on; stage 3 and the bf16
  // optimizer of stage 0 never read it. Before, the block is a plain dict and
  // the key is ignored. Its default is overflow_check_bf16_stages12.
  bool has_bf16_check_grad_overflow = false;
  // 0.19.3 (traced: 0.19.2 does not, 0.19.3 and 0.19.8 do): stage 3 gathers
  // the first prefetch bucket afresh in every micro-step's forward, not only
  // in the first.
  bool stage3_regathers_first_bucket = false;
  // 0.13.2 (traced: 0.10.3 to 0.12.6 gather every forward over the world,
  // 0.14.4 over the hpZ group; read in 0.13.1's and 0.13.2's source:
  // all_gather_coalesced's use_secondary_tensor drops `and not forward`):
  // hpZ's forward gathers read the secondary pieces too, so the first step's
  // forwards read zero.Init's and later micro-steps' forwards their own.
  // Before, only backward gathers do.
  bool hpz_forward_reads_secondary = true;

  // Start-up and the first optimizer step (deepspeed_startup.h issues the
  // start-up calls; the stage-3 gatherer the trace checks).
  // Up to 0.10.3 (0.11.0 removed it, with the per-rank print of partition
  // sizes in DeepSpeedZeroOptimizer.__init__): stage 1/2's optimizer
  // construction calls barrier() once.
  bool stage12_startup_barrier = false;
  // 0.19.8: the engine's parameter broadcast (and zero.Init's at stage 3)
  // sends each tensor as uint8 bytes, not in the parameters' dtype.
  bool startup_broadcast_as_bytes = false;
  // 0.15.4: stage 3 checks its recorded trace at the start of each forward
  // (a start-of-forward hook resets the parameter coordinator), not at the
  // end of the backward: one empty-list broadcast in micro-step 0's forward,
  // the three lists in micro-step 1's.
  bool stage3_trace_check_in_forward = false;
  // 0.17.6: each trace-check list broadcast is preceded by a broadcast of its
  // length (one int64) from rank 0.
  bool stage3_trace_check_sends_length = false;

  // Whether the release issues the overflow check at z.stage for a model of
  // `dtype` (fp16: always at stages 1-3; zerotrain trains fp32 and bf16), with
  // z.bf16_check_grad_overflow ("auto", "true" or "false") deciding bf16 at
  // stages 1/2 in releases that have the key.
  bool overflow_check(DType dtype, const ZeroConfig& z) const;
};

// The behaviour set of `r`; throws std::invalid_argument (one line naming the
// release and the verified range) outside [kOldestVerifiedRelease,
// kNewestVerifiedRelease].
DeepSpeedBehaviours deepspeed_behaviours(const DeepSpeedRelease& r);

// The switches as the release's engine hands them to its ZeRO optimizer
// (before 0.13.0, stage 1 runs with overlap_comm, round_robin_gradients and
// contiguous_gradients off whatever the config says). The schedules build from
// these.
ZeroConfig switches_in_effect(const ZeroConfig& z);

// DeepSpeed's pipeline engine and ZeRO. PipelineEngine.__init__
// (deepspeed/runtime/pipe/engine.py) asserts, right after the base engine is
// built, that the configured ZeRO stage is below 2, so deepspeed.initialize
// with a PipelineModule stops at stages 2 and 3 and runs stages 0 and 1. The
// check arrived in 0.3.16 (DeepSpeed PR 980, April 2021); 0.3.0 to 0.3.15
// have the engine without it. Read at every release tag from 0.3.16 to 0.19.5
// and on master at 0.19.6 in development (August 2026): the condition never
// changed, only its spelling (from 0.10.1 the bound is ZeroStageEnum.gradients,
// whose value is 2); 0.19.6 to 0.19.8 are taken to keep it. Not modelled here:
// from 0.6.2 to 0.9.1, bf16 with ZeRO-1 passed this check and then raised
// NotImplementedError at the pipeline's first gradient reduction
// (_exec_reduce_grads).
constexpr DeepSpeedRelease kFirstPipelineEngineRelease{0, 3, 0};
constexpr DeepSpeedRelease kPipelineRefusesZero2Release{0, 3, 16};

// Whether release r's pipeline engine accepts ZeRO stage `stage`; throws
// std::invalid_argument (one line) for a stage outside 0-3 or a release before
// kFirstPipelineEngineRelease (no pipeline engine) or after
// kNewestVerifiedRelease.
bool pipeline_engine_accepts_zero_stage(const DeepSpeedRelease& r, int stage);

// "0.10.3 to 0.19.8": the range as errors and docs print it.
std::string verified_release_range();

}  // namespace zt
