// What planning builds grows at most linearly with the world size W: `plan`,
// `explain` and `report` plan every stage and path at the W asked for, so
// anything built per rank per tensor (or a walk over every rank per call)
// makes them slow and large at 2^17 ranks and more. The tests count what a
// plan holds (bucket slices, bucket calls, planned calls) at W = 2^10 and 2^20,
// so that they cannot flake the way a timed test would; docs/performance.md
// has the measured times.
#include <algorithm>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/plan.h"
#include "zero/layout/stage3_layout.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

constexpr int kSmallW = 1 << 10, kLargeW = 1 << 20, kPerNode = 8;

// Every entry a plan holds for one step: bucket slices and calls, the calls of
// the first and a steady step.
size_t entries(const StepPlan& p) {
  size_t n = p.first_step.size() + p.steady_step.size();
  for (const GradBucket& b : p.grads.buckets) n += b.slices.size() + b.calls.size();
  return n;
}

StepPlan plan_at(const ZeroConfig& z, const ParamTable& table, int W) {
  ZeroSetup s = setup_for(z, table);
  s.ranks_per_node = kPerNode;
  return plan_step(s, table, W, 2, DType::BF16, NodeMap::uniform(W, kPerNode));
}

// Every listed path of every stage, and stage 3 with each ZeRO++ feature.
std::vector<ZeroConfig> variants() {
  std::vector<ZeroConfig> out;
  for (int stage = 0; stage <= 3; stage++)
    for (const GradPathRow* row : listed_grad_paths(stage)) {
      ZeroConfig z;
      z.stage = stage;
      z.stage3_param_persistence_threshold = 0;
      out.push_back(with_grad_path(z, *row));
    }
  ZeroConfig z3;
  z3.stage = 3;
  z3.stage3_param_persistence_threshold = 0;
  for (int k = 0; k < 3; k++) {
    ZeroConfig z = z3;
    z.zero_hpz_partition_size = k == 0 ? kPerNode : 1;
    z.zero_quantized_weights = k == 1;
    z.zero_quantized_gradients = k == 2;
    out.push_back(z);
  }
  return out;
}

}  // namespace

TEST_CASE("a plan's size does not grow with W beyond a few entries per rank", "[plan_scaling]") {
  // Large enough that every rank owns gradient elements at W = 2^20.
  const ParamTable table(gpt_shape(2, 2, 128, 16384, kT));
  REQUIRE(table.total() > 2u * kLargeW);
  const size_t tensors = table.params().size();
  for (const ZeroConfig& z : variants()) {
    const StepPlan small = plan_at(z, table, kSmallW), large = plan_at(z, table, kLargeW);
    INFO("stage " << z.stage << " path " << small.path->key << ", hpZ " << z.zero_hpz_partition_size
                  << ", qwZ " << z.zero_quantized_weights << ", qgZ " << z.zero_quantized_gradients
                  << ": " << entries(small) << " entries at W " << kSmallW << ", " << entries(large)
                  << " at W " << kLargeW);
    if (z.stage == 3 || small.path->primitive != Primitive::Reduce) {
      // Whatever a rank owns, the schedule lists a run of pieces per tensor (and
      // per chunk, for the aligned layout). W changes only which tensors end in
      // a shorter piece of their own and where qgZ applies (its call is four
      // all-to-alls): a few entries per tensor, never per rank.
      CHECK(entries(large) <= entries(small) + 4 * tensors);
    } else {
      // A rooted reduce per owner: each rank adds at most a piece, a reduce
      // and its planned call (two micro-steps, first and steady step) in each
      // partition group, here 2. An entry per rank per tensor would add
      // `tensors` per rank.
      REQUIRE(tensors > 16);
      CHECK(entries(large) <= entries(small) + 16 * static_cast<size_t>(kLargeW - kSmallW));
      CHECK(entries(large) > static_cast<size_t>(kLargeW));  // the bound is met per rank
    }
  }
}

TEST_CASE("stage 3's runs of pieces are the per-rank pieces of every tensor", "[plan_scaling]") {
  const ParamTable table(tiny_model());
  for (int W : {1, 3, 4, 7, 64, 5000}) {
    for (int mode = 0; mode < 3; mode++) {  // reduce-scatter, all-reduce, qgZ
      ZeroConfig z;
      z.stage = 3;
      z.reduce_bucket_size = 3000;
      z.reduce_scatter = mode != 1;
      z.zero_quantized_gradients = mode == 2;
      const int per_node = W % 2 == 0 ? 2 : 1;
      const Stage3Layout layout(table, make_param_groups(table, "two"), W, z);
      const ZeroSetup s = setup_for(z, table);
      const BucketSchedule g = layout.grad_buckets(table, grad_ready_order(s.events), z, per_node);
      for (const GradBucket& b : g.buckets) {
        // Each tensor's pieces, expanded, cover it once, rank by rank, each
        // within the bucket.
        std::vector<std::vector<BucketSlice>> of(table.params().size());
        for (const BucketSlice& run : b.slices)
          for (int k = 0; k < run.ranks; k++) of[run.param].push_back(run.piece(k));
        for (int p : b.params) {
          INFO("W " << W << ", mode " << mode << ", tensor " << table.params()[p].name);
          const size_t numel = table.params()[p].numel, piece = layout.piece(p);
          const std::vector<BucketSlice>& pieces = of[p];
          REQUIRE(pieces.size() == std::min<size_t>(W, (numel + piece - 1) / piece));
          for (size_t r = 0; r < pieces.size(); r++) {
            CHECK(pieces[r].owner == static_cast<int>(r));
            CHECK(pieces[r].param_offset == r * piece);
            CHECK(pieces[r].n == std::min(piece, numel - r * piece));
            CHECK(pieces[r].offset + pieces[r].n <= b.size);
          }
          if (pieces.size() > 1) CHECK(pieces[1].offset > pieces[0].offset);
        }
      }
    }
  }
}

TEST_CASE("a bucket's owners: runs count their ranks, each rank once", "[plan_scaling]") {
  GradBucket b;
  b.slices.push_back({0, 0, 4, 0, 0, 5, 4});   // ranks 0..4
  b.slices.push_back({1, 0, 2, 3, 20, 4, 2});  // ranks 3..6
  b.slices.push_back({2, 0, 1, 9, 30});        // rank 9
  CHECK(b.owners() == 8);
  GradBucket replicated;
  replicated.slices.push_back({0, 0, 4, -1, 0});
  replicated.slices.push_back({1, 0, 4, -1, 4});
  CHECK(replicated.owners() == 1);
}

TEST_CASE("an all-to-all's inter-node share counts each rank's peers on other nodes",
          "[plan_scaling]") {
  // Uneven nodes, so that no shortcut for a uniform placement could pass.
  NodeMap nodes;
  for (int r = 0; r < 24; r++) nodes.node_of.push_back(r < 5 ? 0 : r < 13 ? 1 : r < 14 ? 2 : 3);
  const int W = static_cast<int>(nodes.node_of.size());
  for (const RankGroup g : {RankGroup{24, 1}, RankGroup{4, 1}, RankGroup{6, 4}, RankGroup{3, 2}}) {
    double sum = 0;
    for (int r = 0; r < W; r++) {
      int across = 0;
      for (int m : g.members_of(r)) across += nodes.node_of[m] != nodes.node_of[r];
      sum += static_cast<double>(across) / (g.size - 1);
    }
    INFO("group of " << g.size << " ranks " << g.stride << " apart");
    CHECK(nodes.group_inter_node_share(Primitive::AllToAll, g) == sum / W);
  }
  CHECK(nodes.nodes() == 4);
  CHECK(nodes.ranks_per_node() == 10);
}

}  // namespace zt
