#include "zero/schedule/deepspeed_behaviours.h"

#include <stdexcept>

namespace zt {

// The newest verified release: a config that names none gets what a user
// installing DeepSpeed today would run (tests that pin an older behaviour set
// zero.deepspeed_version themselves).
DeepSpeedRelease default_deepspeed_release() { return kNewestVerifiedRelease; }

std::string verified_release_range() {
  return kOldestVerifiedRelease.str() + " to " + kNewestVerifiedRelease.str();
}

bool DeepSpeedBehaviours::overflow_check(DType dtype, const ZeroConfig& z) const {
  if (z.stage == 0) return false;  // the engine's own path has no overflow check
  if (dtype == DType::F16) return true;
  if (dtype != DType::BF16) return overflow_check_fp32;
  if (overflow_check_bf16) return true;
  if (z.stage == 3) return false;  // stage 3 checks fp16 only from 0.11.2
  if (has_bf16_check_grad_overflow && z.bf16_check_grad_overflow != "auto")
    return z.bf16_check_grad_overflow == "true";
  return overflow_check_bf16_stages12;
}

DeepSpeedBehaviours deepspeed_behaviours(const DeepSpeedRelease& r) {
  if (r < kOldestVerifiedRelease || kNewestVerifiedRelease < r)
    throw std::invalid_argument("DeepSpeed release " + r.str() + " is outside the verified range " +
                                verified_release_range());
  DeepSpeedBehaviours b;
  b.release = r;
  b.has_multi_rank_bucket_allreduce = !(r < DeepSpeedRelease{0, 12, 4});
  b.per_owner_path_reduces = !(r < DeepSpeedRelease{0, 13, 0});
  b.stage1_forces_switches_off = r < DeepSpeedRelease{0, 13, 0};
  b.allreduce_path_sends_whole_buffer = r < DeepSpeedRelease{0, 14, 1};
  b.allreduce_path_reduces_empty_bucket = r < DeepSpeedRelease{0, 14, 5};
  b.stage3_linear_weight_grad_first = !(r < DeepSpeedRelease{0, 19, 4});
  b.overflow_check_fp32 = r < DeepSpeedRelease{0, 11, 2};
  b.overflow_check_bf16 = r < DeepSpeedRelease{0, 11, 2};
  b.overflow_check_bf16_stages12 = !(r < DeepSpeedRelease{0, 19, 3});
  b.has_bf16_check_grad_overflow = !(r < DeepSpeedRelease{0, 17, 1});
  b.stage3_regathers_first_bucket = !(r < DeepSpeedRelease{0, 19, 3});
  b.hpz_forward_reads_secondary = !(r < DeepSpeedRelease{0, 13, 2});
  b.stage12_startup_barrier = r < DeepSpeedRelease{0, 11, 0};
  b.startup_broadcast_as_bytes = !(r < DeepSpeedRelease{0, 19, 8});
  b.stage3_trace_check_in_forward = !(r < DeepSpeedRelease{0, 15, 4});
  b.stage3_trace_check_sends_length = !(r < DeepSpeedRelease{0, 17, 6});
  return b;
}

bool pipeline_engine_accepts_zero_stage(const DeepSpeedRelease& r, int stage) {
  if (stage < 0 || stage > 3)
    throw std::invalid_argument("zero.stage: " + std::to_string(stage) + " must be 0-3");
  if (r < kFirstPipelineEngineRelease || kNewestVerifiedRelease < r)
    throw std::invalid_argument(
        "DeepSpeed release " + r.str() + " has no pipeline engine zerotrain knows (known: " +
        kFirstPipelineEngineRelease.str() + " to " + kNewestVerifiedRelease.str() + ")");
  return stage < 2 || r < kPipelineRefusesZero2Release;
}

ZeroConfig switches_in_effect(const ZeroConfig& z) {
  ZeroConfig out = z;
  if (z.stage == 1 && deepspeed_behaviours(z.deepspeed_version).stage1_forces_switches_off) {
    out.overlap_comm = false;
    out.round_robin_gradients = false;
    out.contiguous_gradients = false;
  }
  return out;
}

}  // namespace zt
