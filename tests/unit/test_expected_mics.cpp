// MiCS (zero.mics_shard_size) against numbers worked out by hand from
// DeepSpeed 0.14.4's mics_utils.py and mics.py, never from zerotrain's helpers,
// on the hand-worked model of test_expected_schedules.cpp (16 tensors, 174
// elements; pieces at 2 ranks: 8 3 2 2 14 5 5 2 2 2 18 6 18 2 2 2, 93 in all)
// at W = 4 with shard groups of S = 2.
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "train/config/config.h"
#include "train/deepspeed/deepspeed_import.h"
#include "zero/analysis/memory_formula.h"
#include "zero/analysis/plan.h"
#include "zero/layout/mics_groups.h"

namespace zt {
namespace {

ZeroConfig mics(int S, bool hierarchical = false) {
  ZeroConfig z;
  z.stage = 3;
  z.mics_shard_size = S;
  z.mics_hierarchical_params_gather = hierarchical;
  return z;
}

// A steady step of the hand-worked model: two micro-steps, every tensor partitioned, one
// bucket for the whole model; two nodes of two ranks.
StepPlan hand_plan(const ZeroConfig& z) {
  const ParamTable t(hand_sized_shape());
  ZeroConfig x = z;
  x.stage3_param_persistence_threshold = 0;
  ZeroSetup s = setup_for(x, t);
  s.ranks_per_node = 2;
  return plan_step(s, t, 4, 2, DType::F32, NodeMap::uniform(4, 2));
}

}  // namespace

// _generate_mics_config: np.arange(W).reshape(-1, S) gives the shard groups {0,1} {2,3};
// column i of that table is a replicate group: {0,2} {1,3}.
TEST_CASE("MiCS groups: S consecutive ranks shard, ranks S apart replicate", "[expected]") {
  const MicsGroups g = mics_groups(mics(2), 4, 4);
  CHECK(g.shard.members_of(3) == std::vector<int>{2, 3});
  CHECK(g.shard.members_of(0) == std::vector<int>{0, 1});
  CHECK(g.replica.members_of(3) == std::vector<int>{1, 3});
  CHECK(g.replica.members_of(2) == std::vector<int>{0, 2});
  CHECK(g.replicated());
  CHECK_FALSE(g.hierarchical);
  // W = 8, S = 8 on nodes of 2: span 4 nodes; intra-node {0,1} ..., inter-node {0,2,4,6} and
  // {1,3,5,7}; the intra call's output holds local rank 0's inter result (shard ranks 0 2 4 6),
  // then local rank 1's (1 3 5 7): shard rank s lands in block (s % 2) * 4 + s / 2.
  const MicsGroups h = mics_groups(mics(8, true), 8, 2);
  CHECK(h.intra_node.members_of(5) == std::vector<int>{4, 5});
  CHECK(h.inter_node.members_of(5) == std::vector<int>{1, 3, 5, 7});
  const std::vector<int> blocks = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int s = 0; s < 8; s++) CHECK(h.gathered_block(s) == blocks[s]);
  // Off: the world is the one shard group, nothing replicated.
  ZeroConfig off;
  off.stage = 3;
  const MicsGroups w = mics_groups(off, 4, 2);
  CHECK(w.shard.members_of(2) == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(w.replicated());
}

TEST_CASE("MiCS groups: bad sizes and combinations are one-line errors naming the key",
          "[expected]") {
  auto message = [](const ZeroConfig& z, int W, int per_node) {
    return error_of<std::invalid_argument>([&] { mics_groups(z, W, per_node); });
  };
  require_parts(message(mics(3), 4, 4),
                {"zero.mics_shard_size 3", "does not divide the world size 4"});
  require_parts(message(mics(8), 4, 4), {"zero.mics_shard_size 8", "world size 4"});
  ZeroConfig two = mics(2);
  two.stage = 2;
  require_parts(message(two, 4, 4), {"zero.mics_shard_size 2", "stage 3 only", "got stage 2"});
  ZeroConfig hpz = mics(2);
  hpz.zero_hpz_partition_size = 2;
  require_parts(message(hpz, 4, 4), {"zero.mics_shard_size 2 with zero.zero_hpz_partition_size"});
  ZeroConfig offload = mics(2);
  offload.offload_optimizer.device = "cpu";
  require_parts(message(offload, 4, 4), {"with zero.offload_optimizer.device"});
  // DeepSpeed: span = S // ranks per node must exceed 1 ("sharding spans on single node").
  require_parts(message(mics(2, true), 4, 2),
                {"zero.mics_hierarchical_params_gather", "2 ranks", "several nodes"});
  for (const std::string& m : {message(mics(3), 4, 4), message(mics(2, true), 4, 2)})
    CHECK(m.find('\n') == std::string::npos);
}

// The steady step at W = 4, S = 2, two micro-steps, one bucket of all 16 tensors:
// micro 0: one reduce-scatter of the 93 elements of each rank's pieces over {S, 1};
// micro 1: the same, then one all-reduce of the rank's 93 accumulated elements over the
// replica group {2, 2} (allreduce_mics_shard_grads, only at the boundary); the step: one
// float64 norm per parameter group over the shard group. Every partitioned tensor is gathered
// once in micro 0's forward (the step released them all): 93 elements per rank in all.
TEST_CASE("MiCS at W = 4, S = 2: the step's calls, groups, counts and bytes", "[expected]") {
  const StepPlan p = hand_plan(mics(2));
  const RankGroup shard{2, 1};
  std::vector<std::string> grads;
  size_t fwd0_gathered = 0;
  for (const PlannedCall& c : p.steady_step) {
    if (c.purpose == Purpose::Gradients)
      grads.push_back(std::to_string(c.micro) + " " + primitive_name(c.primitive) + " " +
                      std::to_string(c.count) + " " + std::to_string(c.group.size) + "/" +
                      std::to_string(c.group.stride));
    if (c.primitive == Primitive::AllGather) {
      CHECK(c.group == shard);
      if (c.phase == Phase::Forward && c.micro == 0) fwd0_gathered += c.count;
    }
    if (c.purpose == Purpose::Scalars) {
      CHECK(c.group == shard);
      CHECK(c.dtype == DType::F64);
    }
  }
  CHECK(grads == std::vector<std::string>{"0 reduce_scatter 93 2/1", "1 reduce_scatter 93 2/1",
                                          "1 all_reduce 93 2/2"});
  CHECK(fwd0_gathered == 93);
  // Bytes per rank (fp32): the reduce-scatters' payload 93 x 2 x 4 = 744 each, bus x 1/2;
  // the replica all-reduce 93 x 4 = 372, bus x 2 (2 - 1) / 2 = 372, all of it across the
  // nodes (ranks 0 and 2 sit on different nodes of 2).
  const PlannedPrimitive& rs = p[Primitive::ReduceScatter];
  CHECK(rs.calls == 2);
  CHECK(rs.bytes == 2 * 744);
  CHECK(rs.bus_bytes == 744.0);
  CHECK(rs.inter_node_bus_bytes == 0.0);  // {0,1} and {2,3} are each one node
  const PlannedPrimitive& ar = p[Primitive::AllReduce];
  CHECK(ar.calls == 3);  // the replica all-reduce and two norms
  CHECK(ar.bytes == 372 + 2 * 8);
  CHECK(ar.inter_node_bus_bytes == 372.0);
  // Model states per rank: 20 bytes per element of the 93-element shard (fp32 parameters 4,
  // gradients 4, master, m and v 12), against 20 x 48 at plain stage 3 over 4 ranks (pieces of
  // ceil(numel / 4): 4 2 1 1 7 3 3 1 1 1 9 3 9 1 1 1 = 48).
  CHECK(p.padded_params == 186);
  CHECK(p.params_bytes + p.grads_bytes + p.optimizer_bytes == 20 * 93);
  ZeroConfig plain;
  plain.stage = 3;
  const StepPlan q = hand_plan(plain);
  CHECK(q.params_bytes + q.grads_bytes + q.optimizer_bytes == 20 * 48);
}

// S = W: one shard group of the whole world, nothing to replicate: plain stage 3's calls.
TEST_CASE("MiCS with S = W plans plain stage 3's calls", "[expected]") {
  ZeroConfig plain;
  plain.stage = 3;
  const StepPlan a = hand_plan(plain), b = hand_plan(mics(4));
  REQUIRE(a.steady_step.size() == b.steady_step.size());
  for (size_t i = 0; i < a.steady_step.size(); i++) {
    const PlannedCall &x = a.steady_step[i], &y = b.steady_step[i];
    CHECK(x.primitive == y.primitive);
    CHECK(x.count == y.count);
    CHECK(x.micro == y.micro);
    CHECK((x.group.size == 0 ? 4 : x.group.size) == y.group.size);
  }
  CHECK(a.params_bytes + a.grads_bytes + a.optimizer_bytes ==
        b.params_bytes + b.grads_bytes + b.optimizer_bytes);
}

// The hierarchical gather at W = 4, S = 4 on nodes of 2: each gather is one call across the
// 2 nodes ({2, 2}: its own pieces) and one inside the node ({2, 1}: twice as many).
TEST_CASE("MiCS hierarchical gather: across the nodes, then inside the node", "[expected]") {
  const StepPlan p = hand_plan(mics(4, true));
  const std::vector<PlannedCall>& s = p.steady_step;
  size_t gathers = 0;
  for (size_t i = 0; i < s.size(); i++) {
    const PlannedCall& c = s[i];
    if (c.primitive != Primitive::AllGather || c.phase == Phase::Step) continue;
    if (c.group == RankGroup{2, 2}) {
      REQUIRE(i + 1 < s.size());
      CHECK(s[i + 1].group == (RankGroup{2, 1}));
      CHECK(s[i + 1].count == 2 * c.count);
      gathers++;
    } else {
      CHECK(c.group == (RankGroup{2, 1}));
    }
  }
  CHECK(gathers > 0);
}

TEST_CASE("MiCS keys: YAML validation and the ds_config importer", "[expected]") {
  auto load_error = [](const std::string& yaml, int world = 4) {
    TestFile file(yaml, "mics.yaml");
    const std::string m = error_of<ConfigError>([&] {
      Config c = load_config(file.path, {});
      validate_for_world(c, world);
    });
    CHECK(m.find('\n') == std::string::npos);
    return m;
  };
  require_parts(load_error("zero:\n  stage: 3\n  mics_shard_size: 0\n"),
                {"zero.mics_shard_size", "expected -1 (off) or a shard group size >= 1, got 0"});
  require_parts(load_error("zero:\n  stage: 3\n  mics_shard_size: -2\n"),
                {"zero.mics_shard_size", "-2"});
  require_parts(load_error("zero:\n  stage: 2\n  mics_shard_size: 2\n"),
                {"expected zero.stage 3 with zero.mics_shard_size", "got stage 2"});
  require_parts(load_error("zero:\n  stage: 3\n  mics_hierarchical_params_gather: true\n"),
                {"expected zero.mics_shard_size >= 1 with zero.mics_hierarchical_params_gather"});
  require_parts(load_error("zero:\n  stage: 3\n  mics_shard_size: 2\n  zero_quantized_weights: "
                           "true\n"),
                {"expected zero.zero_quantized_weights off with zero.mics_shard_size 2"});
  require_parts(load_error("model:\n  seq_len: 64\ntrain:\n  micro_batch: 1\n  "
                           "global_batch_tokens: 256\nzero:\n  stage: 3\n  mics_shard_size: 3\n"),
                {"key 'zero.mics_shard_size'", "dividing the world size 4", "got 3"});
  // DeepSpeed turns MiCS on for sizes > 0 only; -1 and 0 are plain stage 3.
  for (const std::string size : {"2", "-1", "0"}) {
    const bool on = size == "2";
    TestFile ds(R"({"zero_optimization": {"stage": 3, "mics_shard_size": )" + size +
                    (on ? R"(, "mics_hierarchical_params_gather": true)" : "") + "}}",
                "ds_config.json");
    Config c;
    std::vector<std::string> warnings;
    apply_deepspeed_config(ds.path, c, warnings, 4);
    CHECK(c.zero.mics_shard_size == (on ? 2 : -1));
    CHECK(c.zero.mics_hierarchical_params_gather == on);
    for (const std::string& w : warnings) CHECK(w.find("mics") == std::string::npos);
  }
}

}  // namespace zt
