// DeepSpeed's start-up calls and stage 3's first-step trace checks, per
// release (deepspeed_behaviours.h's start-up block), against counts worked out
// by hand on the hand-sized model (16 tensors, 174 elements; test_expected_
// schedules.cpp lists them) and the traces' findings in RELEASES.md.
#include <cstddef>
#include <string>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/deepspeed_startup.h"

namespace zt {
namespace {

DeepSpeedBehaviours at(const char* release) {
  return deepspeed_behaviours(parse_deepspeed_release(release));
}

ZeroConfig stage_at(int stage, const char* release) {
  ZeroConfig z;
  z.stage = stage;
  z.deepspeed_version = parse_deepspeed_release(release);
  return z;
}

struct Tally {
  size_t broadcasts = 0, broadcast_elems = 0, gathers = 0, gather_elems = 0, barriers = 0;
  DType broadcast_dtype = DType::F64;
};

Tally tally(const std::vector<StartupCall>& calls) {
  Tally t;
  for (const StartupCall& c : calls) {
    if (c.kind == StartupCall::Broadcast) {
      t.broadcasts++;
      t.broadcast_elems += c.count;
      t.broadcast_dtype = c.dtype;
    } else if (c.kind == StartupCall::AllGather) {
      t.gathers++;
      t.gather_elems += c.count;
    } else {
      t.barriers++;
    }
  }
  return t;
}

std::vector<StartupCall> startup(int stage, const char* release, DType model = DType::F32) {
  const ParamTable t(hand_sized_shape());
  return deepspeed_startup_calls(setup_for(stage_at(stage, release), t), t, 4, model);
}

// The stage-3 trace checks of the first and a steady step, as (phase, micro, count).
struct Check {
  Phase phase;
  int micro;
  size_t count;
  bool operator==(const Check& o) const {
    return phase == o.phase && micro == o.micro && count == o.count;
  }
};

std::vector<Check> trace_checks(const std::vector<PlannedCall>& calls) {
  std::vector<Check> out;
  for (const PlannedCall& c : calls)
    if (c.primitive == Primitive::Broadcast) out.push_back({c.phase, c.micro, c.count});
  return out;
}

StepPlan stage3_plan(const char* release) {
  const ParamTable t(hand_sized_shape());
  return plan_step(setup_for(stage_at(3, release), t), t, 4, 3, DType::F32, NodeMap::uniform(4, 4));
}

}  // namespace

TEST_CASE("the start-up and first-step behaviours change where the traces show",
          "[deepspeed_release]") {
  // stage 1/2's barrier in the optimizer's construction: 0.10.3 (traced), gone in 0.11.0.
  CHECK(at("0.10.3").stage12_startup_barrier);
  CHECK_FALSE(at("0.11.0").stage12_startup_barrier);
  CHECK_FALSE(at("0.19.8").stage12_startup_barrier);
  // The parameter broadcast as bytes: 0.19.8 only (0.19.7 traced in the parameters' dtype).
  CHECK_FALSE(at("0.19.7").startup_broadcast_as_bytes);
  CHECK(at("0.19.8").startup_broadcast_as_bytes);
  // Stage 3's trace check at the forward's start: from 0.15.4 (0.15.3 in the backward).
  CHECK_FALSE(at("0.15.3").stage3_trace_check_in_forward);
  CHECK(at("0.15.4").stage3_trace_check_in_forward);
  // Its length broadcasts: from 0.17.6.
  CHECK_FALSE(at("0.17.5").stage3_trace_check_sends_length);
  CHECK(at("0.17.6").stage3_trace_check_sends_length);
}

TEST_CASE("start-up: one broadcast per tensor, in the parameters' dtype or as bytes",
          "[deepspeed_release]") {
  // 16 tensors of 174 elements: fp32 through 0.19.7; 0.19.8 sends their bytes, 4 x 174 = 696
  // (fp32) or 2 x 174 = 348 (bf16).
  const Tally fp32 = tally(startup(0, "0.17.6"));
  CHECK(fp32.broadcasts == 16);
  CHECK(fp32.broadcast_elems == 174);
  CHECK(fp32.broadcast_dtype == DType::F32);
  CHECK(fp32.barriers == 0);
  const Tally bytes = tally(startup(0, "0.19.8"));
  CHECK(bytes.broadcasts == 16);
  CHECK(bytes.broadcast_elems == 696);
  CHECK(bytes.broadcast_dtype == DType::U8);
  CHECK(tally(startup(2, "0.19.8", DType::BF16)).broadcast_elems == 348);
  CHECK(tally(startup(1, "0.19.7", DType::BF16)).broadcast_dtype == DType::BF16);
  for (const StartupCall& c : startup(1, "0.14.4"))
    CHECK(c.what.rfind("deepspeed start-up parameter broadcast ", 0) == 0);
}

TEST_CASE("start-up: stage 1/2's barrier up to 0.10.3, after the broadcasts",
          "[deepspeed_release]") {
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const std::vector<StartupCall> old = startup(stage, "0.10.3");
    CHECK(tally(old).barriers == 1);
    CHECK(old.size() == 17);
    CHECK(old.back().kind == StartupCall::Barrier);
    CHECK(tally(startup(stage, "0.11.0")).barriers == 0);
  }
  CHECK(tally(startup(0, "0.10.3")).barriers == 0);
}

TEST_CASE("start-up at stage 3: zero.Init's broadcasts, a gather per tensor by group, 3 barriers",
          "[deepspeed_release]") {
  // W = 4: each tensor's piece is ceil(numel / 4). The decay group first (wte 15 -> 4, wpe 6
  // -> 2, c_attn.w 27 -> 7, attn.c_proj.w 9 -> 3, c_fc.w 36 -> 9, mlp.c_proj.w 36 -> 9: 34),
  // then the other ten (3 3 9 3 3 3 12 3 3 3 -> 1 1 3 1 1 1 3 1 1 1: 14).
  const std::vector<StartupCall> calls = startup(3, "0.14.4");
  const Tally t = tally(calls);
  CHECK(t.broadcasts == 32);
  CHECK(t.broadcast_elems == 2 * 174);
  CHECK(t.gathers == 16);
  CHECK(t.gather_elems == 48);
  CHECK(t.barriers == 3);
  std::vector<int> order;
  std::vector<size_t> counts;
  for (const StartupCall& c : calls)
    if (c.kind == StartupCall::AllGather) {
      order.push_back(c.param);
      counts.push_back(c.count);
    }
  CHECK(order == std::vector<int>{0, 1, 4, 6, 10, 12, 2, 3, 5, 7, 8, 9, 11, 13, 14, 15});
  CHECK(counts == std::vector<size_t>{4, 2, 7, 3, 9, 9, 1, 1, 3, 1, 1, 1, 3, 1, 1, 1});
  // 0.19.8: the broadcasts go as bytes, the gathers stay fp32.
  const Tally bytes = tally(startup(3, "0.19.8"));
  CHECK(bytes.broadcast_elems == 2 * 696);
  CHECK(bytes.gather_elems == 48);
}

TEST_CASE("start-up under MiCS: the optimizer's gathers run over the shard group",
          "[deepspeed_release]") {
  // mics_shard_size 2 at W = 4 (traced on 0.14.4: group 2/1, pieces of a half): each piece is
  // ceil(numel / 2): 8 3 14 5 18 18 (decay group: 66), then 2 2 5 2 2 2 6 2 2 2 (27): 93. The
  // broadcasts stay over the world.
  const ParamTable t(hand_sized_shape());
  ZeroConfig z = stage_at(3, "0.14.4");
  z.mics_shard_size = 2;
  const std::vector<StartupCall> calls = deepspeed_startup_calls(setup_for(z, t), t, 4, DType::F32);
  const Tally mics = tally(calls);
  CHECK(mics.broadcasts == 32);
  CHECK(mics.gathers == 16);
  CHECK(mics.gather_elems == 93);
  for (const StartupCall& c : calls) {
    const RankGroup want = c.kind == StartupCall::AllGather ? RankGroup{2, 1} : RankGroup{0, 1};
    CHECK(c.group == want);
  }
  // A shard group of the whole world is plain stage 3: world gathers of a quarter.
  z.mics_shard_size = 4;
  const std::vector<StartupCall> whole = deepspeed_startup_calls(setup_for(z, t), t, 4, DType::F32);
  CHECK(tally(whole).gather_elems == 48);
  for (const StartupCall& c : whole) CHECK(c.group == RankGroup{0, 1});
}

TEST_CASE("stage 3's trace checks: in the backward, then the forward, then with lengths",
          "[deepspeed_release]") {
  const StepPlan before = stage3_plan("0.14.4");
  const std::vector<Check> lists = trace_checks(before.first_step);
  // Up to 0.15.3: module order, parameter ids, parameter steps, at micro-step 0's backward end.
  REQUIRE(lists.size() == 3);
  for (const Check& c : lists) CHECK((c.phase == Phase::Backward && c.micro == 0));
  // Every parameter is traced once per module that uses it: ids and steps have one entry each.
  CHECK(lists[1].count == lists[2].count);
  CHECK(trace_checks(before.steady_step).empty());

  // 0.15.4: the empty trace checked at micro-step 0's forward, the lists at micro-step 1's.
  const StepPlan forward = stage3_plan("0.15.4");
  const std::vector<Check> expected_forward = {{Phase::Forward, 0, 0},
                                               {Phase::Forward, 1, lists[0].count},
                                               {Phase::Forward, 1, lists[1].count},
                                               {Phase::Forward, 1, lists[2].count}};
  CHECK(trace_checks(forward.first_step) == expected_forward);
  CHECK(trace_checks(forward.steady_step).empty());

  // 0.17.6: each list after a one-element broadcast of its length: 8 calls.
  const StepPlan lengths = stage3_plan("0.17.6");
  const std::vector<Check> expected_lengths = {
      {Phase::Forward, 0, 1}, {Phase::Forward, 0, 0},
      {Phase::Forward, 1, 1}, {Phase::Forward, 1, lists[0].count},
      {Phase::Forward, 1, 1}, {Phase::Forward, 1, lists[1].count},
      {Phase::Forward, 1, 1}, {Phase::Forward, 1, lists[2].count}};
  CHECK(trace_checks(lengths.first_step) == expected_lengths);
  CHECK(trace_checks(lengths.steady_step).empty());
}

TEST_CASE("the trainer's start-up calls move rank 0's weights, as the plan lists them",
          "[deepspeed_release]") {
  auto ops = make_cpu_ops();
  CountingCommunicator comm(make_single_communicator(*ops));
  comm.keep_log();
  const ParamTable t(hand_sized_shape());
  const ZeroSetup s = setup_for(stage_at(3, "0.19.8"), t);
  const std::vector<StartupCall> calls = deepspeed_startup_calls(s, t, 1, DType::F32);
  std::vector<float> w(t.total());
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.25f * static_cast<float>(i);
  const std::vector<float> before = w;
  issue_startup_calls(calls, t, DType::F32, *ops, comm, w.data());
  CHECK(w == before);  // one rank: rank 0's weights are its own
  // 32 broadcasts of 4 x 174 bytes and 16 gathers of whole tensors (W = 1): the barriers are
  // not collectives the trace counts.
  size_t broadcast_bytes = 0, gathers = 0;
  for (const CallRecord& r : comm.log()) {
    CHECK(r.phase == Phase::Init);
    if (r.primitive == Primitive::Broadcast) {
      CHECK(r.dtype == DType::U8);
      broadcast_bytes += r.count;
    } else if (r.primitive == Primitive::AllGather) {
      gathers++;
    }
  }
  CHECK(broadcast_bytes == 2 * 696);
  CHECK(gathers == 16);
}

}  // namespace zt
