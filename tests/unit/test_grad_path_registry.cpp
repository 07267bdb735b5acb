// The gradient-path registry (zero/schedule/grad_path_registry.h) against DeepSpeed's
// selection written out independently here, and every consumer reading the
// same row: the engines' summary label, plan's label and buffers, the stage-3
// bucket rule and the paper-volume search's switch list.
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/paper_volume.h"
#include "zero/analysis/plan.h"
#include "zero/comm/communicators.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

// stage_1_and_2.py's and stage3.py's checks, in their order (zerotrain's
// native_reduce_scatter first at stages 1/2).
std::string deepspeed_choice(const ZeroConfig& z) {
  if (z.stage == 0) return "allreduce";
  if (z.stage == 3)
    return !z.reduce_scatter && z.contiguous_gradients ? "allreduce" : "reduce_scatter";
  if (z.native_reduce_scatter) return "reduce_scatter";
  if (!z.contiguous_gradients) return "allreduce_fallback";
  if (!z.reduce_scatter) return "allreduce";
  return z.use_multi_rank_bucket_allreduce ? "multi_rank_allreduce" : "per_owner_reduce";
}

ZeroConfig switches(int stage, int bits) {
  ZeroConfig z;
  z.stage = stage;
  z.reduce_scatter = bits & 1;
  z.use_multi_rank_bucket_allreduce = bits & 2;
  z.contiguous_gradients = bits & 4;
  z.native_reduce_scatter = stage != 3 && stage != 0 && (bits & 8);
  return z;
}

}  // namespace

TEST_CASE("the registry selects what DeepSpeed's checks select, for every switch setting",
          "[plan]") {
  for (int stage = 0; stage <= 3; stage++)
    for (int bits = 0; bits < 16; bits++) {
      const ZeroConfig z = switches(stage, bits);
      INFO("stage " << stage << " switches " << bits);
      const GradPathRow& row = select_grad_path(z);
      CHECK(row.key == deepspeed_choice(z));
      CHECK(row.first_stage <= stage);
      CHECK(stage <= row.last_stage);
    }
}

TEST_CASE("every row's switches select it, and each stage has one DeepSpeed default", "[plan]") {
  for (const GradPathRow& row : grad_path_registry()) {
    INFO("stage " << row.first_stage << " " << row.key << ": " << row.chosen_by);
    // A row of an older release's path (per_slice_reduce, before 0.12.4) is
    // selected by its switches at the oldest release zerotrain emulates.
    for (int stage = row.first_stage; stage <= row.last_stage; stage++) {
      ZeroConfig z, old;
      z.stage = old.stage = stage;
      old.deepspeed_version = kOldestVerifiedRelease;
      CHECK((&select_grad_path(with_grad_path(z, row)) == &row ||
             &select_grad_path(with_grad_path(old, row)) == &row));
    }
  }
  for (int stage = 0; stage <= 3; stage++) {
    int defaults = 0;
    std::set<std::string> keys;
    for (const GradPathRow* row : listed_grad_paths(stage)) {
      defaults += row->deepspeed_default;
      CHECK(keys.insert(row->key).second);  // plan's labels are unique within a stage
    }
    CHECK(defaults == 1);
    ZeroConfig z;
    z.stage = stage;
    CHECK(select_grad_path(z).deepspeed_default);
  }
}

TEST_CASE("the paper-volume search flips exactly the registry's DeepSpeed switches", "[plan]") {
  for (int stage = 1; stage <= 3; stage++) {
    std::set<std::string> registry;
    for (const GradPathRow& row : grad_path_registry())
      if (row.first_stage <= stage && stage <= row.last_stage)
        for (const SwitchChange& c : row.switches)
          if (c.key != "native_reduce_scatter") registry.insert(c.key);
    ZeroConfig z;
    z.stage = stage;
    std::set<std::string> searched;
    for (const SwitchChange& c : switches_deciding_volume(z, DType::F32))
      if (c.key != "round_robin_gradients") searched.insert(c.key);
    INFO("stage " << stage);
    CHECK(searched == registry);
  }
}

// stage3.py all-reduces a bucket only with contiguous_gradients; without it
// reduce_scatter: false still reduce-scatters, and every label must say so.
TEST_CASE("stage 3 without contiguous_gradients reduce-scatters and is labelled so", "[plan]") {
  const ParamTable table(tiny_model());
  ZeroConfig z;
  z.stage = 3;
  z.reduce_scatter = false;
  z.contiguous_gradients = false;
  const ZeroSetup s = setup_for(z, table);
  const StepPlan plan = plan_step(s, table, 1, 2, DType::F32, NodeMap::uniform(1, 1));
  CHECK(plan.path->key == "reduce_scatter");
  REQUIRE_FALSE(plan.grads.buckets.empty());
  for (const GradBucket& b : plan.grads.buckets)
    for (const BucketCall& c : b.calls) CHECK(c.primitive == Primitive::ReduceScatter);
  std::unique_ptr<Ops> ops = make_cpu_ops();
  std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
  const std::unique_ptr<ZeroEngine> engine = make_zero_engine(s, table, *ops, *comm);
  CHECK(engine->grad_path_key() == "reduce_scatter");
  CHECK(engine->describe().find(plan.path->describe) != std::string::npos);

  z.contiguous_gradients = true;
  const StepPlan contiguous =
      plan_step(setup_for(z, table), table, 1, 2, DType::F32, NodeMap::uniform(1, 1));
  CHECK(contiguous.path->key == "allreduce");
}

// DeepSpeed's ipg double buffer comes with overlap_comm at stages 1-3; stage
// 0's engine reduces on the compute stream, one bucket at a time.
TEST_CASE("the schedule's bucket buffers follow overlap_comm, and plan times them so", "[plan]") {
  const ParamTable table(tiny_model());
  for (int stage = 0; stage <= 3; stage++)
    for (bool overlap : {false, true}) {
      ZeroConfig z;
      z.stage = stage;
      z.overlap_comm = overlap;
      z.overlap_comm_set = true;
      const StepPlan p =
          plan_step(setup_for(z, table), table, 2, 2, DType::F32, NodeMap::uniform(2, 2));
      INFO("stage " << stage << " overlap_comm " << overlap);
      const bool two = stage > 0 && overlap;
      CHECK(p.grads.buffers == (two ? 2 : 1));
      CHECK(p.double_buffered == two);
      CHECK(p.overlap_comm == (stage > 0 && overlap));
    }
}

}  // namespace zt
