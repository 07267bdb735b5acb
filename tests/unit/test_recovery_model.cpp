// The recovery model against layouts worked out by hand (docs/recovery.md).
#include "tests/support/catch.h"
#include "zero/analysis/recovery_model.h"

using namespace zt;
using Catch::Matchers::WithinRel;

namespace {
ReplicaLayout layout(int world, int per_node, int shard_group, uint64_t shard = 100) {
  ReplicaLayout l;
  l.world = world;
  l.ranks_per_node = per_node;
  l.shard_group = shard_group;
  l.shard_elements = shard;
  return l;
}
}  // namespace

TEST_CASE("replicas: which node losses every piece survives", "[recovery_model]") {
  // 4 x 1, MiCS S = 2: ranks 0, 2 hold piece 0; ranks 1, 3 piece 1.
  const ReplicaLayout mics = layout(4, 1, 2);
  CHECK(survives(mics, {1}));
  CHECK(survives(mics, {0, 1}));
  CHECK_FALSE(survives(mics, {1, 3}));
  CHECK_FALSE(survives(mics, {0, 2}));
  // Of the six pairs, {0, 2} and {1, 3} take a piece.
  CHECK_THAT(recoverable_fraction(mics, 2), WithinRel(4.0 / 6.0, 1e-12));
  CHECK(recoverable_fraction(mics, 1) == 1.0);
  // 2 x 2 plain ZeRO (S = W): either node holds pieces nobody else has.
  CHECK(recoverable_fraction(layout(4, 2, 4), 1) == 0.0);
  // 2 x 2 with S = 2: each node holds a whole copy.
  CHECK(recoverable_fraction(layout(4, 2, 2), 1) == 1.0);
  CHECK(recoverable_fraction(layout(4, 2, 2), 2) == 0.0);
  // Stage 0: every rank holds everything; only losing every node loses it.
  CHECK(recoverable_fraction(layout(4, 1, 1), 3) == 1.0);
  // 4 nodes x 2, S = 4: pieces 0, 1 on nodes {0, 2}; pieces 2, 3 on nodes {1, 3}.
  const ReplicaLayout wide = layout(8, 2, 4);
  CHECK_FALSE(survives(wide, {0, 2}));
  CHECK(survives(wide, {0, 1}));
  CHECK_THAT(recoverable_fraction(wide, 2), WithinRel(4.0 / 6.0, 1e-12));
}

TEST_CASE("restore bytes: the distinct pieces of a node cross its link once", "[recovery_model]") {
  // 12 bytes (master, m, v) x 100 elements per piece.
  CHECK(restore_bytes_into_node(layout(4, 2, 2), 0) == 2 * 1200);
  CHECK(restore_bytes_into_node(layout(4, 2, 1), 1) == 1200);  // stage 0: one copy for both
  CHECK(restore_bytes_into_node(layout(8, 2, 4), 1) == 2 * 1200);
}

TEST_CASE("recovery time: the parts add up as the model states", "[recovery_model]") {
  const ReplicaLayout l = layout(4, 2, 2, 1000000);  // 12 MB per rank, 24 MB per node
  RecoveryRates r;
  r.inter_node_bytes_per_s = 1.2e9;
  r.pcie_bytes_per_s = 12e9;
  r.storage_bytes_per_s = 1.2e9;
  r.snapshot_copy_bytes_per_s = 6e9;
  RecoveryInputs in;
  in.detection_s = 1;
  in.relaunch_s = 2;
  in.step_s = 1;
  in.forward_backward_s = 0.5;
  in.checkpoint_every = 10;
  const RecoveryPrediction p = predict_recovery(l, r, in);
  CHECK_THAT(p.restore_s, WithinRel(0.02 + 0.001, 1e-12));
  CHECK_THAT(p.copy_s, WithinRel(0.002, 1e-12));
  CHECK(p.exposed_copy_s == 0.0);
  CHECK_THAT(p.lost_work_s, WithinRel(0.502, 1e-12));
  CHECK_THAT(p.total_s, WithinRel(1 + 2 + 0.021 + 0.502, 1e-12));
  CHECK(p.store_bytes_per_node == 48000000u);
  CHECK_THAT(p.disk_restore_s, WithinRel(0.011, 1e-12));
  CHECK_THAT(p.disk_lost_work_s, WithinRel(5.0, 1e-12));
  CHECK_THAT(p.disk_total_s, WithinRel(8.011, 1e-12));
  // A copy longer than forward and backward shows the rest.
  in.forward_backward_s = 0.0005;
  CHECK_THAT(predict_recovery(l, r, in).exposed_copy_s, WithinRel(0.0015, 1e-9));
}
