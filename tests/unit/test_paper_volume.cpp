// The ZeRO paper's volume and the smallest switch change that reaches it
// (zero/analysis/paper_volume.h, what `explain` prints), on fresh model shapes, world
// sizes and accumulation counts.
#include <random>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/paper_volume.h"

namespace zt {
namespace {

struct Case {
  GPTConfig shape;
  int world, micro;
};

Case random_case(std::mt19937_64& rng, int min_world) {
  Case c;
  c.shape = tiny_model();
  c.shape.n_layer = 1 + static_cast<int>(rng() % 3);
  c.shape.vocab_size = 40 + static_cast<int>(rng() % 60);
  c.world = min_world + static_cast<int>(rng() % 5);
  c.micro = 1 + static_cast<int>(rng() % 4);
  return c;
}

}  // namespace

TEST_CASE("the paper's volume follows ZERO_SEMANTICS.md's formulas", "[plan]") {
  std::mt19937_64 rng(test_seed());
  const uint64_t psi = 1000 + rng() % 1000000;
  const int A = 1 + static_cast<int>(rng() % 8);
  for (DType t : {DType::F32, DType::BF16}) {
    const double b = static_cast<double>(psi) * dtype_size(t);
    CHECK(paper_volume(0, psi, A, t).total() == 2 * b);
    CHECK(paper_volume(1, psi, A, t).grads_bytes == b);
    CHECK(paper_volume(1, psi, A, t).params_bytes == b);
    CHECK(paper_volume(2, psi, A, t).grads_bytes == A * b);
    CHECK(paper_volume(2, psi, A, t).params_bytes == b);
    CHECK(paper_volume(3, psi, A, t).grads_bytes == A * b);
    CHECK(paper_volume(3, psi, A, t).params_bytes == 2.0 * A * b);
  }
}

TEST_CASE("stage 2's default reaches the paper's volume with per-owner reduces", "[plan]") {
  std::mt19937_64 rng(test_seed() ^ 0x51);
  const Case c = random_case(rng, 4);  // W >= 4: the multi-rank all-reduce moves more than Ψ
  INFO("W = " << c.world << ", A = " << c.micro << ", layers " << c.shape.n_layer);
  const ParamTable table(c.shape);
  ZeroConfig z;
  z.stage = 2;
  const ZeroSetup s = setup_for(z, table);
  const NodeMap nodes = NodeMap::uniform(c.world, c.world);
  const std::vector<PlannedChange> planned = plan_changes(
      s, table, c.world, c.micro, DType::F32, nodes, switches_deciding_volume(z, DType::F32), 3);
  const double paper = paper_volume(2, table.total(), c.micro, DType::F32).total();
  CHECK(planned.front().changes.empty());
  CHECK(planned.front().moved > paper);
  const PlannedChange* best = smallest_reaching(planned, paper);
  REQUIRE(best);
  CHECK(best->text() == "use_multi_rank_bucket_allreduce: false");
  CHECK(best->plan.path->key == "per_owner_reduce");
  // The candidate is what plan_step gives for the changed config.
  ZeroSetup changed = s;
  changed.z.use_multi_rank_bucket_allreduce = false;
  CHECK(best->moved == moved_bytes(plan_step(changed, table, c.world, c.micro, DType::F32, nodes)));
  // Per-owner reduces move each gradient element once per reducing micro-step.
  double grads = 0;
  for (const PlannedPrimitive& p :
       best->plan.per_step_by_purpose[static_cast<int>(Purpose::Gradients)])
    grads += p.bus_bytes;
  CHECK(grads == 4.0 * table.total() * c.micro);
}

TEST_CASE("at W = 2 DeepSpeed's default already moves the paper's volume", "[plan]") {
  std::mt19937_64 rng(test_seed() ^ 0x52);
  Case c = random_case(rng, 2);
  c.world = 2;
  const ParamTable table(c.shape);
  ZeroConfig z;
  z.stage = 1 + static_cast<int>(rng() % 2);
  const std::vector<PlannedChange> planned =
      plan_changes(setup_for(z, table), table, 2, c.micro, DType::F32, NodeMap::uniform(2, 2),
                   switches_deciding_volume(z, DType::F32), 3);
  const PlannedChange* best =
      smallest_reaching(planned, paper_volume(z.stage, table.total(), c.micro, DType::F32).total());
  REQUIRE(best);
  CHECK(best->changes.empty());
}

TEST_CASE("fp32 communication of a bf16 model needs two switch changes", "[plan]") {
  std::mt19937_64 rng(test_seed() ^ 0x53);
  const Case c = random_case(rng, 4);
  INFO("W = " << c.world << ", A = " << c.micro);
  const ParamTable table(c.shape);
  ZeroConfig z;
  z.stage = 1;
  z.communication_data_type = "fp32";
  const std::vector<SwitchChange> switches = switches_deciding_volume(z, DType::BF16);
  CHECK(switches.back().text() == "communication_data_type: bf16");
  const std::vector<PlannedChange> planned =
      plan_changes(setup_for(z, table), table, c.world, c.micro, DType::BF16,
                   NodeMap::uniform(c.world, c.world), switches, 3);
  const PlannedChange* best =
      smallest_reaching(planned, paper_volume(1, table.total(), c.micro, DType::BF16).total());
  REQUIRE(best);
  CHECK(best->text() == "use_multi_rank_bucket_allreduce: false, communication_data_type: bf16");
}

TEST_CASE("stage 0 has no switch that changes its volume", "[plan]") {
  ZeroConfig z;
  CHECK(switches_deciding_volume(z, DType::F32).empty());
  z.stage = 3;
  for (const SwitchChange& c : switches_deciding_volume(z, DType::F32))
    CHECK((c.key == "reduce_scatter" || c.key == "contiguous_gradients"));
}

}  // namespace zt
