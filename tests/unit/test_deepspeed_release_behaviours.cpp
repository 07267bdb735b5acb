// The release -> behaviour mapping (zero/schedule/deepspeed_behaviours.h)
// against tests/reference/deepspeed/RELEASES.md's findings, written out here
// by hand: the release where each behaviour changed, a patch on each side.
// Then what the schedule makes of them on the hand-sized model, and the
// config key's one-line refusal outside the verified range.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "train/config/config.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/grad_path_registry.h"
#include "zero/schedule/stage012_schedule.h"

namespace zt {
namespace {

DeepSpeedBehaviours at(const char* release) {
  return deepspeed_behaviours(parse_deepspeed_release(release));
}

}  // namespace

TEST_CASE("each behaviour changes at the release RELEASES.md names", "[deepspeed_release]") {
  // use_multi_rank_bucket_allreduce appears in 0.12.4 (traced: 0.12.3 / 0.12.4).
  CHECK_FALSE(at("0.10.3").has_multi_rank_bucket_allreduce);
  CHECK_FALSE(at("0.12.3").has_multi_rank_bucket_allreduce);
  CHECK(at("0.12.4").has_multi_rank_bucket_allreduce);
  CHECK(at("0.19.8").has_multi_rank_bucket_allreduce);
  // Its false path all-reduces through 0.12.6 (rank = None), reduces from 0.13.0.
  CHECK_FALSE(at("0.12.4").per_owner_path_reduces);
  CHECK_FALSE(at("0.12.6").per_owner_path_reduces);
  CHECK(at("0.13.0").per_owner_path_reduces);
  CHECK(at("0.14.4").per_owner_path_reduces);
  // Stage 1's forced-off switches: up to 0.12.6, not from 0.13.0.
  CHECK(at("0.10.3").stage1_forces_switches_off);
  CHECK(at("0.12.6").stage1_forces_switches_off);
  CHECK_FALSE(at("0.13.0").stage1_forces_switches_off);
  // reduce_scatter: false sends the whole buffer up to 0.14.0, the filled part from 0.14.1.
  CHECK(at("0.13.5").allreduce_path_sends_whole_buffer);
  CHECK(at("0.14.0").allreduce_path_sends_whole_buffer);
  CHECK_FALSE(at("0.14.1").allreduce_path_sends_whole_buffer);
  // The overflow check: fp32 and bf16 at stages 1-3 through 0.11.1; bf16 again
  // from 0.19.3 at stages 1/2 only (s3_bf16_commfp32 has none at 0.19.8); fp16
  // always; never at stage 0.
  for (int stage : {1, 2, 3}) {
    INFO("stage " << stage);
    ZeroConfig z;
    z.stage = stage;
    CHECK(at("0.11.1").overflow_check(DType::F32, z));
    CHECK(at("0.11.1").overflow_check(DType::BF16, z));
    CHECK_FALSE(at("0.11.2").overflow_check(DType::F32, z));
    CHECK_FALSE(at("0.11.2").overflow_check(DType::BF16, z));
    CHECK_FALSE(at("0.19.2").overflow_check(DType::BF16, z));
    CHECK(at("0.19.3").overflow_check(DType::BF16, z) == (stage < 3));
    CHECK_FALSE(at("0.19.8").overflow_check(DType::F32, z));
    CHECK(at("0.14.4").overflow_check(DType::F16, z));
  }
  ZeroConfig stage0;
  stage0.stage = 0;
  CHECK_FALSE(at("0.10.3").overflow_check(DType::F32, stage0));
  // Stage 3's fresh first gather: traced at 0.19.3 and 0.19.8, not at 0.19.2.
  CHECK_FALSE(at("0.18.9").stage3_regathers_first_bucket);
  CHECK_FALSE(at("0.19.2").stage3_regathers_first_bucket);
  CHECK(at("0.19.3").stage3_regathers_first_bucket);
  CHECK(at("0.19.8").stage3_regathers_first_bucket);
  // hpZ's forwards read the secondary pieces from 0.13.2 (traced: 0.12.6 not,
  // 0.14.4 does; read in 0.13.1's and 0.13.2's all_gather_coalesced).
  CHECK_FALSE(at("0.12.6").hpz_forward_reads_secondary);
  CHECK_FALSE(at("0.13.1").hpz_forward_reads_secondary);
  CHECK(at("0.13.2").hpz_forward_reads_secondary);
  CHECK(at("0.14.4").hpz_forward_reads_secondary);
}

TEST_CASE("a release outside the verified range is refused in one line naming the range",
          "[deepspeed_release]") {
  for (const char* bad : {"0.9.5", "0.10.2", "0.19.9", "1.0.0"}) {
    INFO(bad);
    try {
      at(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      CHECK(m.find(bad) != std::string::npos);
      CHECK(m.find("0.10.3 to 0.19.8") != std::string::npos);
      CHECK(m.find('\n') == std::string::npos);
    }
  }
  // The default is the newest verified release, spelled out here so that a
  // change of either is seen.
  CHECK((ZeroConfig().deepspeed_version == DeepSpeedRelease{0, 19, 8}));
  CHECK(ZeroConfig().deepspeed_version == kNewestVerifiedRelease);
}

TEST_CASE("the gradient path and the switches follow the release", "[deepspeed_release]") {
  ZeroConfig z;
  z.stage = 2;
  z.deepspeed_version = {0, 12, 3};
  CHECK(select_grad_path(z).key == "per_slice_reduce");
  z.deepspeed_version = {0, 12, 4};
  CHECK(select_grad_path(z).key == "multi_rank_allreduce");
  z.use_multi_rank_bucket_allreduce = false;
  CHECK(select_grad_path(z).key == "per_owner_reduce");

  ZeroConfig s1;
  s1.stage = 1;
  s1.overlap_comm = s1.round_robin_gradients = true;
  s1.deepspeed_version = {0, 12, 6};
  const ZeroConfig forced = switches_in_effect(s1);
  CHECK_FALSE(forced.overlap_comm);
  CHECK_FALSE(forced.round_robin_gradients);
  CHECK_FALSE(forced.contiguous_gradients);
  s1.deepspeed_version = {0, 13, 0};
  CHECK(switches_in_effect(s1).overlap_comm);
  ZeroConfig s2 = s1;
  s2.stage = 2;
  s2.deepspeed_version = {0, 12, 6};
  CHECK(switches_in_effect(s2).contiguous_gradients);  // stage 2 is left alone
}

// The hand-sized model (test_support.h): 16 tensors of 15, 6, 3, 3, 27, 9, 9,
// 3, 3, 3, 36, 12, 36, 3, 3, 3 elements, 174 in all; one group, W = 2.
TEST_CASE("the schedule issues what each release does on the hand-sized model",
          "[deepspeed_release]") {
  const ParamTable table(hand_sized_shape());
  REQUIRE(table.total() == 174);
  auto schedule = [&](ZeroConfig z, DType dtype) {
    return make_stage012_schedule(setup_for(z, table, "one"), table, 2, dtype);
  };
  ZeroConfig z;
  z.stage = 2;
  z.reduce_bucket_size = 21;
  z.reduce_scatter = false;
  // Before 0.14.1 each bucket's all-reduce covers the 21-element buffer, a
  // tensor over 21 (27, 36, 36) alone at its own size; from 0.14.1 the filled part.
  for (const char* release : {"0.13.5", "0.14.4"}) {
    INFO(release);
    z.deepspeed_version = parse_deepspeed_release(release);
    const Stage012Schedule s = schedule(z, DType::F32);
    const bool whole = std::string(release) == "0.13.5";
    for (const GradBucket& b : s.grads.buckets) {
      size_t filled = 0;
      for (int p : b.params) filled += table.params()[p].numel;
      REQUIRE(b.calls.size() == 1);
      CHECK(b.calls[0].primitive == Primitive::AllReduce);
      CHECK(b.calls[0].count == (whole ? std::max<size_t>(filled, 21) : filled));
    }
  }
  // The overflow check: the step's first call, one uint8, where the release has it.
  z.reduce_scatter = true;
  struct Case {
    const char* release;
    DType dtype;
    bool check;
  };
  for (const Case& c : {Case{"0.10.3", DType::F32, true}, Case{"0.11.2", DType::F32, false},
                        Case{"0.19.2", DType::BF16, false}, Case{"0.19.8", DType::BF16, true},
                        Case{"0.19.8", DType::F32, false}}) {
    INFO(c.release << " " << dtype_name(c.dtype));
    z.deepspeed_version = parse_deepspeed_release(c.release);
    const Stage012Schedule s = schedule(z, c.dtype);
    const bool first_is_check = !s.step.empty() && s.step[0].kind == StepCall::OverflowCheck;
    CHECK(first_is_check == c.check);
    if (first_is_check) {
      CHECK(s.step[0].dtype == DType::U8);
      CHECK(s.step[0].count == 1);
    }
  }
}

TEST_CASE("zero.deepspeed_version outside the verified range is a one-line config error",
          "[deepspeed_release]") {
  const TestFile yaml("zero:\n  stage: 2\n  deepspeed_version: 0.9.5\n", "c.yaml");
  try {
    load_config(yaml.path, {});
    FAIL("accepted 0.9.5");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("zero.deepspeed_version") != std::string::npos);
    CHECK(m.find("0.9.5") != std::string::npos);
    CHECK(m.find("0.10.3 to 0.19.8") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
  const Config ok = load_config(yaml.path, {"zero.deepspeed_version=0.12.6"});
  CHECK((ok.zero.deepspeed_version == DeepSpeedRelease{0, 12, 6}));
}

}  // namespace zt
