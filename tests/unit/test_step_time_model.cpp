// The step-time model (zero/analysis/step_time_model.h) on cases small enough to work
// out by hand; every expected number below is derived in the comment beside it.
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "zero/analysis/link_load.h"
#include "zero/analysis/step_time_model.h"

namespace zt {
namespace {

using Catch::Matchers::WithinRel;

// One nanosecond per payload byte for every primitive: a call's time is its
// payload in ns (linear between 1 B -> 1 ns and 1 GB -> 1 s).
NetworkModel ns_per_byte() {
  NetworkModel net;
  net.source = "test";
  for (int p = 0; p < static_cast<int>(Primitive::kCount); p++)
    net.curves.push_back({static_cast<Primitive>(p), DType::F32, {1, 1e9}, {1e-9, 1}});
  return net;
}

// An fp32 all-reduce of `ms` milliseconds under ns_per_byte(): 4 B per element.
PlannedCall grad_call(double ms, double at, int micro = 0, Phase phase = Phase::Backward) {
  return {phase,
          micro,
          Purpose::Gradients,
          Primitive::AllReduce,
          DType::F32,
          static_cast<size_t>(ms * 1e6 / 4),
          -1,
          "gradients",
          at};
}

PlannedCall gather_call(double ms, double at, Phase phase, int micro = 0) {
  // all-gather payload = its output = count x W elements; W = 4 here.
  return {phase,
          micro,
          Purpose::Parameters,
          Primitive::AllGather,
          DType::F32,
          static_cast<size_t>(ms * 1e6 / 16),
          -1,
          "parameters",
          at};
}

ComputeTimes compute_ms(double micro, double opt) { return {micro * 1e-3, opt * 1e-3, "test", ""}; }

// Link figures: 1 GB/s inside a node, 1 MB/s per node link, 0.1 ms per inter-node ring step.
NetworkModel slow_node_links() {
  NetworkModel net;
  net.link.intra_node_bytes_per_s = 1e9;
  net.link.inter_node_bytes_per_s = 1e6;
  net.link.inter_latency_s = 1e-4;
  return net;
}

}  // namespace

TEST_CASE("measured curves: linear between sizes, proportional above, flat below", "[model]") {
  NetworkModel net;
  net.source = "test";
  net.curves.push_back({Primitive::Reduce, DType::F32, {1000, 2000}, {1e-3, 3e-3}});
  const NodeMap nodes = NodeMap::uniform(4, 1);
  auto reduce_of = [&](double bytes) {
    return net.call_seconds({Phase::Step, 0, Purpose::Gradients, Primitive::Reduce, DType::F32,
                             static_cast<size_t>(bytes / 4), 0, "", 0},
                            4, nodes);
  };
  CHECK_THAT(reduce_of(1500), WithinRel(2e-3, 1e-12));  // halfway: 1 ms + (3 - 1) / 2 ms
  CHECK_THAT(reduce_of(4000), WithinRel(6e-3, 1e-12));  // 2x the largest: 2 x 3 ms
  CHECK_THAT(reduce_of(400), WithinRel(1e-3, 1e-12));   // below the smallest: its time
  try {
    net.call_seconds(
        {Phase::Step, 0, Purpose::Gradients, Primitive::AllGather, DType::F32, 10, -1, "", 0}, 4,
        nodes);
    FAIL("expected an error for a primitive without a curve");
  } catch (const std::runtime_error& e) {
    require_parts(e.what(), {"test", "no curve for all_gather"});
  }
}

TEST_CASE("link figures: the slowest link gates a ring; a node's link carries its senders",
          "[model]") {
  const NetworkModel net = slow_node_links();
  const PlannedCall ar{
      Phase::Step, 0, Purpose::Gradients, Primitive::AllReduce, DType::F32, 250000, -1,
      "",          0};  // 1 MB payload
  // 4 nodes x 1: bus = 2 * 3/4 * 1e6 = 1.5e6 B per rank, each rank's through its
  // node's link: 1.5 s, plus 2 * 3 ring steps of 0.1 ms.
  CHECK_THAT(net.call_seconds(ar, 4, NodeMap::uniform(4, 1)), WithinRel(1.5 + 6e-4, 1e-12));
  // 2 nodes x 2: ranks 1 and 3 send across, one per node: 1.5e6 B through each
  // node link (1.5 s); ranks 0 and 2 send 1.5e6 B within their node (1.5 ms).
  CHECK_THAT(net.call_seconds(ar, 4, NodeMap::uniform(4, 2)), WithinRel(1.5 + 6e-4, 1e-12));
  // One node of 4: intra-node only, 1.5e6 B at 1e9 B/s, no inter-node latency.
  CHECK_THAT(net.call_seconds(ar, 4, NodeMap::uniform(4, 4)), WithinRel(1.5e-3, 1e-12));
  // A rooted reduce (bus factor 1) on 4 x 1: 1e6 B per link, 3 steps.
  const PlannedCall rd{Phase::Step, 0, Purpose::Gradients, Primitive::Reduce, DType::F32, 250000, 0,
                       "",          0};
  CHECK_THAT(net.call_seconds(rd, 4, NodeMap::uniform(4, 1)), WithinRel(1.0 + 3e-4, 1e-12));
  // One rank: nothing moves.
  CHECK(net.call_seconds(ar, 1, NodeMap::uniform(1, 1)) == 0);
}

TEST_CASE("calls over sub-groups: hpZ and qgZ's groups on link figures and fitted curves",
          "[model]") {
  const NetworkModel net = slow_node_links();
  const NodeMap nodes = NodeMap::uniform(4, 2);
  // qgZ's all-to-all across 2 nodes ({2, 2}: ranks 0-2 and 1-3): 1000 bytes
  // per peer, payload 2000 B, bus 2000 x 1/2 = 1000 B per rank, all of it to
  // the other node; a node's two ranks share its link: 2000 B at 1e6 B/s =
  // 2 ms, plus one exchange step of 0.1 ms.
  PlannedCall across{
      Phase::Backward, 0, Purpose::Gradients, Primitive::AllToAll, DType::I8, 1000, -1, "", 0,
      RankGroup{2, 2}};
  CHECK_THAT(net.call_seconds(across, 4, nodes), WithinRel(2e-3 + 1e-4, 1e-12));
  // In the node ({2, 1}): 1000 B at 1e9 B/s, no inter-node latency.
  PlannedCall local = across;
  local.group = RankGroup{2, 1};
  CHECK_THAT(net.call_seconds(local, 4, nodes), WithinRel(1e-6, 1e-12));
  // hpZ's all-gather in the node: count 500 fp32, payload 4000 B, bus 2000 B.
  PlannedCall hpz{
      Phase::Backward, 0, Purpose::Parameters, Primitive::AllGather, DType::F32, 500, -1, "", 0,
      RankGroup{2, 1}};
  CHECK_THAT(net.call_seconds(hpz, 4, nodes), WithinRel(2e-6, 1e-12));

  // Fitted to a world-wide all-gather curve on 2 x 2: 4 B in 3 ms (3 ring
  // steps: 1 ms each), 4e6 B in 2.003 s: bus 3e6 B, half the ranks send
  // across, so a node link moves 2 x 3e6 x 1/2 = 3e6 B in 2 s: 1.5e6 B/s.
  NetworkModel measured;
  measured.source = "test";
  measured.curves.push_back({Primitive::AllGather, DType::F32, {4, 4e6}, {3e-3, 2.003}});
  PlannedCall world{
      Phase::Forward, 0, Purpose::Parameters, Primitive::AllGather, DType::F32, 250000, -1, "", 0};
  CHECK_THAT(measured.call_seconds(world, 4, nodes), WithinRel(2.003, 1e-12));  // the curve
  // Over {2, 2} (every rank sends across): count 750000, payload 6e6 B, bus 3e6
  // B per rank, 2 x 3e6 B through a node link: 4 s, plus 1 step of 1 ms.
  PlannedCall pair = world;
  pair.count = 750000;
  pair.group = RankGroup{2, 2};
  CHECK_THAT(measured.call_seconds(pair, 4, nodes), WithinRel(4.0 + 1e-3, 1e-9));
}

TEST_CASE("without overlap every call waits; the step adds optimizer and step calls", "[model]") {
  // Stage 2, 2 micro-steps, each ending with a 10 ms gradient call after its
  // backward; a 5 ms parameter all-gather in the step; micro-step 30 ms,
  // optimizer 8 ms over the whole model (2 ms for a quarter shard at W = 4).
  StepPlan plan;
  plan.stage = 2;
  plan.steady_step = {grad_call(10, 1.0, 0), grad_call(10, 1.0, 1),
                      gather_call(5, 0, Phase::Step, 1)};
  const StepTimePrediction p =
      predict_step(plan, 4, 2, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 8));
  CHECK_THAT(p.compute_s, WithinRel(62e-3, 1e-9));  // 2 x 30 + 8 / 4
  CHECK_THAT(p.comm_s, WithinRel(25e-3, 1e-9));     // 10 + 10 + 5
  CHECK_THAT(p.step_s, WithinRel(87e-3, 1e-9));     // nothing hidden: 62 + 25
  CHECK_THAT(p.exposed_s, WithinRel(25e-3, 1e-9));
  // Stage 0 updates the whole model: 8 ms of optimizer.
  plan.stage = 0;
  CHECK_THAT(
      predict_step(plan, 4, 2, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 8)).step_s,
      WithinRel(93e-3, 1e-9));
}

TEST_CASE("with overlap gradient calls run beside the backward; the last one shows", "[model]") {
  // One micro-step of 30 ms: forward 10, backward 20 (ms 10..30). Calls of
  // 4 ms at the backward's middle (ready at 20, done at 24) and end (ready at
  // 30, done at 34): the step ends at 34, 4 ms exposed.
  StepPlan plan;
  plan.stage = 2;
  plan.overlap_comm = true;
  plan.steady_step = {grad_call(4, 0.5), grad_call(4, 1.0)};
  StepTimePrediction p =
      predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 0));
  CHECK_THAT(p.step_s, WithinRel(34e-3, 1e-9));
  CHECK_THAT(p.exposed_s, WithinRel(4e-3, 1e-9));
  // Calls of 15 ms queue on the one channel: 20..35, then 35..50.
  plan.steady_step = {grad_call(15, 0.5), grad_call(15, 1.0)};
  p = predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 0));
  CHECK_THAT(p.step_s, WithinRel(50e-3, 1e-9));
  // Without overlap the compute waits for the first: 20..35, backward resumes
  // to 45, then the second 45..60.
  plan.overlap_comm = false;
  p = predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 0));
  CHECK_THAT(p.step_s, WithinRel(60e-3, 1e-9));
}

TEST_CASE("stage 2's two alternating buckets stall the compute that fills a third", "[model]") {
  // Backward of 30 ms (ms 15..45; forward 15) with buckets closing at 1/3
  // (ms 25), 2/3 (ms 35) and 1 (ms 45), each reduced in 20 ms: bucket 0
  // 25..45, bucket 1 45..65. Filling bucket 2 needs bucket 0's buffer, free at
  // 45, so the compute past 2/3 (reached at 35) waits until 45 and reaches
  // the end at 55; bucket 2 runs 65..85. Without the constraint (unlimited
  // buffers) the compute would end at 45, and the calls the same: 85 either
  // way, but the compute's end moves: checked through a fourth bucket.
  StepPlan plan;
  plan.stage = 2;
  plan.overlap_comm = true;
  plan.double_buffered = true;
  plan.steady_step = {grad_call(20, 1.0 / 3), grad_call(20, 2.0 / 3), grad_call(20, 1.0)};
  StepTimePrediction p =
      predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(45, 0));
  CHECK_THAT(p.step_s, WithinRel(85e-3, 1e-9));
  // Buckets at 1/4, 1/2, 3/4, 1 of a 40 ms backward (ms 20..60), 2 ms each:
  // no stall, done at 60 + 2.
  plan.steady_step = {grad_call(2, 0.25), grad_call(2, 0.5), grad_call(2, 0.75), grad_call(2, 1)};
  p = predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(60, 0));
  CHECK_THAT(p.step_s, WithinRel(62e-3, 1e-9));
  // 12 ms each: b0 30..42, b1 42..54; b2 needs b0 (free at 42 > 40 when the
  // compute reaches 1/2): compute resumes at 42, reaches 3/4 at 52, b2 54..66;
  // b3 needs b1 (free at 54 > 52): compute resumes at 54, ends at 64; b3 66..78.
  plan.steady_step = {grad_call(12, 0.25), grad_call(12, 0.5), grad_call(12, 0.75),
                      grad_call(12, 1)};
  p = predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(60, 0));
  CHECK_THAT(p.step_s, WithinRel(78e-3, 1e-9));
}

TEST_CASE("over Open MPI the two buckets in flight share the links side by side", "[model]") {
  // Backward of 40 ms (ms 20..60). Bucket 0 closes at 1/4 (ms 30), 12 ms;
  // bucket 1 at 0.3 (ms 32), 2 ms; bucket 2 at 0.9, 2 ms. Filling bucket 2
  // needs bucket 0's buffer, so the compute cannot pass 0.3 before bucket 0
  // is done.
  // - In issue order (NCCL, one stream): bucket 0 ends at 42; the compute
  //   resumes there, reaches 0.9 at 66 (bucket 2: 66..68) and ends at 70.
  // - Side by side (Open MPI): at ms 32 bucket 0 has 10 ms left and bucket 1
  //   brings 2, so bucket 0 ends at 32 + 10 + 2 = 44; the compute resumes at
  //   44 and ends at 72 (bucket 2: 68..70).
  StepPlan plan;
  plan.stage = 2;
  plan.overlap_comm = true;
  plan.double_buffered = true;
  plan.steady_step = {grad_call(12, 0.25), grad_call(2, 0.3), grad_call(2, 0.9)};
  NetworkModel net = ns_per_byte();
  auto step_s = [&] {
    return predict_step(plan, 4, 1, NodeMap::uniform(4, 1), net, compute_ms(60, 0)).step_s;
  };
  CHECK_THAT(step_s(), WithinRel(70e-3, 1e-9));
  net.open_mpi = true;
  CHECK_THAT(step_s(), WithinRel(72e-3, 1e-9));
  // With the optimizer offloaded, bucket 0's later end also delays its
  // gradients' copies to the host. The shard: 12e6 fp32 elements in one
  // chunk; PCIe 1 GB/s, so the 48 MB of gradients take 48 ms, shared by the
  // buckets' elements (12 : 2 : 2): 36, 6 and 6 ms. Host AdamW 12 ms, the
  // upload 48 ms.
  // - Side by side: copies 44..80, 80..86 and (bucket 2 done at 70) 86..92;
  //   the backward ended at 72, so the step is 72 + 20 + 12 + 48 = 152 ms.
  // - In issue order: bucket 0 done at 42, copies 42..78, 78..84, 84..90; the
  //   backward ended at 70: 70 + 20 + 12 + 48 = 150 ms.
  plan.dtype_bytes = 4;
  plan.optimizer_offload.device = "cpu";
  plan.optimizer_offload.shard = 12000000;
  plan.optimizer_offload.chunks = 1;
  net.host.pcie_bytes_per_s = 1e9;
  net.host.adamw_elements_per_s = 1e9;
  CHECK_THAT(step_s(), WithinRel(152e-3, 1e-9));
  net.open_mpi = false;
  CHECK_THAT(step_s(), WithinRel(150e-3, 1e-9));
}

TEST_CASE("LinkClock::shared_end: a link's backlog b with w joining ends at b + min(b, w)",
          "[model][concurrent]") {
  // Three links; a rooted call of 5 s on link 0 alone, issued at 0.
  LinkClock links(3);
  LinkLoad on0, on1;
  on0.uniform = on1.uniform = false;
  on0.shares = {{0, 1.0}};
  on1.shares = {{1, 1.0}};
  const LinkLoad every;  // uniform: every link
  links.issue({{5.0, &on0}}, 0);
  // At 1 s link 0 has 4 s left. A call on link 1 does not touch it: 5.
  CHECK(links.shared_end({{4.0, &on1}}, 1) == Approx(5.0));
  // 3 s more on link 0: 1 + 4 + 3 = 8; 6 s more: 1 + 4 + 4 = 9 (the backlog
  // ends first, after 2 x 4 s shared).
  CHECK(links.shared_end({{3.0, &on0}}, 1) == Approx(8.0));
  CHECK(links.shared_end({{6.0, &on0}}, 1) == Approx(9.0));
  // A ring loads every link: 2 s of it, 1 + 4 + 2 = 7.
  CHECK(links.shared_end({{2.0, &every}}, 1) == Approx(7.0));
  // After the backlog has drained nothing is in flight: the end is `at`.
  CHECK(links.shared_end({{2.0, &every}}, 6) == Approx(6.0));
}

TEST_CASE("stage 3's gathers are prefetched; the compute waits where it needs them", "[model]") {
  // Forward 10 ms, backward 20 ms. A 6 ms gather needed at the forward's start
  // delays it to 6..16; one needed at the backward's middle is issued at its
  // start (16..22) and is ready before the compute reaches the middle (26).
  StepPlan plan;
  plan.stage = 3;
  plan.overlap_comm = true;
  plan.steady_step = {gather_call(6, 0, Phase::Forward), gather_call(6, 0.5, Phase::Backward)};
  const StepTimePrediction p =
      predict_step(plan, 4, 1, NodeMap::uniform(4, 1), ns_per_byte(), compute_ms(30, 0));
  CHECK_THAT(p.step_s, WithinRel(36e-3, 1e-9));  // 6 + 10 + 20
  CHECK_THAT(p.exposed_s, WithinRel(6e-3, 1e-9));
}

TEST_CASE("offload: gradient copies follow their calls; the step pipelines chunk uploads",
          "[model]") {
  // One micro-step of 30 ms (backward 10..30) with two 4 ms gradient calls of
  // equal elements, done at 24 and 34. The shard: 1e6 fp32 elements in 4
  // chunks; PCIe 1 GB/s, so each call's share of the gradients (2 MB) takes
  // 2 ms: 24..26 and 34..36. The step starts at 36. Host AdamW at 1e9
  // elements/s: 0.25 ms per chunk; each chunk's upload 1 ms: 0.25 + 1 + 3 x 1
  // = 4.25 ms. Step: 36 + 4.25.
  StepPlan plan;
  plan.stage = 2;
  plan.overlap_comm = true;
  plan.dtype_bytes = 4;
  plan.steady_step = {grad_call(4, 0.5), grad_call(4, 1.0)};
  plan.optimizer_offload.device = "cpu";
  plan.optimizer_offload.shard = 1000000;
  plan.optimizer_offload.chunks = 4;
  NetworkModel net = ns_per_byte();
  net.host.pcie_bytes_per_s = 1e9;
  net.host.adamw_elements_per_s = 1e9;
  auto predict = [&] {
    return predict_step(plan, 4, 1, NodeMap::uniform(4, 1), net, compute_ms(30, 0));
  };
  StepTimePrediction p = predict();
  CHECK_THAT(p.step_s, WithinRel(40.25e-3, 1e-9));
  CHECK_THAT(p.compute_s, WithinRel(36.25e-3, 1e-9));  // 30 + 2 ms waiting for copies + 4.25
  // nvme at 4.8 GB/s: 24 B per element, 5 ms, 1.25 per chunk, longer than the
  // AdamW and the upload: 1.25 + 1 + 3 x 1.25 = 6 ms.
  plan.optimizer_offload.device = "nvme";
  net.host.nvme_bytes_per_s = 4.8e9;
  CHECK_THAT(predict().step_s, WithinRel(42e-3, 1e-9));
  // Stage 3's offloaded parameters go to the host store, not up: 4 x 0.25 ms
  // of AdamW after the copies.
  plan.optimizer_offload.device = "cpu";
  plan.params_offloaded = true;
  CHECK_THAT(predict().step_s, WithinRel(37e-3, 1e-9));
  // No gradient calls (one rank): the copies start when the backward ends.
  plan.params_offloaded = false;
  plan.steady_step.clear();
  CHECK_THAT(predict().step_s, WithinRel(38.25e-3, 1e-9));  // 30 + 4 + 4.25
}

}  // namespace zt

namespace zt {

TEST_CASE("rooted reduces to different roots issued together share the links",
          "[model][concurrent]") {
  // 8 nodes x 1 on Open MPI, 1 MB/s per link and direction, no latency, a
  // plain launch: libnbc's own choice for n = 8e6 B (2e6 fp32 elements) is
  // Rabenseifner's. Every rank sends and receives n/2 + n/4 + n/8 = 7n/8 in
  // the reduce-scatter; the gather brings the root 7n/8 more (n/8 from rank 4,
  // n/4 from 2, n/2 from 1): 1.75n on its in link, 14 s alone.
  NetworkModel net = slow_node_links();
  net.link.inter_latency_s = 0;
  net.open_mpi = true;
  net.reduce_algorithm = ReduceAlgorithm::LibnbcDefault;
  const NodeMap nodes = NodeMap::uniform(8, 1);
  std::vector<PlannedCall> calls;
  for (int root = 0; root < 8; root++)
    calls.push_back({Phase::Backward, 0, Purpose::Gradients, Primitive::Reduce, DType::F32, 2000000,
                     root, "gradients, bucket 0", 1.0});
  CHECK_THAT(net.call_seconds(calls[0], 8, nodes), WithinRel(14.0, 1e-12));
  // Issued together, one to each root: each in link carries 8 x 7n/8 of
  // reduce-scatter and, over the 8 gathers (rank k plays in the tree rooted
  // at r what rank k ^ r plays in rank 0's), 1.5n of gather: 8.5n, 68 s,
  // where one channel adds up 8 x 14 s = 112 s.
  std::vector<LinkLoad> loads;
  for (const PlannedCall& c : calls) loads.push_back(net.call_load(c, 8, nodes));
  std::vector<std::pair<double, const LinkLoad*>> group;
  for (const LinkLoad& l : loads) group.push_back({14.0, &l});
  LinkClock together(link_count(nodes, 8));
  CHECK_THAT(together.issue(group, 0), WithinRel(68.0, 1e-12));
  // With a wait between them (each issued when the last is done): 112 s.
  LinkClock chained(link_count(nodes, 8));
  double t = 0;
  for (const LinkLoad& l : loads) t = chained.issue({{14.0, &l}}, t);
  CHECK_THAT(t, WithinRel(112.0, 1e-12));
  // Two all-reduces issued together load every link alike: they add up.
  LinkClock rings(link_count(nodes, 8));
  const LinkLoad uniform;
  CHECK_THAT(rings.issue({{1.0, &uniform}, {2.0, &uniform}}, 0.5), WithinRel(3.5, 1e-12));

  // The step: stage 2 without overlap, one bucket of the 8 reduces at the end
  // of a 3 ms backward (micro-step 4.5 ms, optimizer 0): the compute waits
  // 68 s, not 112 s.
  StepPlan plan;
  plan.stage = 2;
  plan.steady_step = calls;
  const StepTimePrediction p = predict_step(plan, 8, 1, nodes, net, compute_ms(4.5, 0));
  CHECK_THAT(p.step_s, WithinRel(4.5e-3 + 68.0, 1e-9));
  CHECK_THAT(p.comm_s, WithinRel(112.0, 1e-9));  // every call's time, added up

  // On an emulated cluster (libnbc's chain, set by scripts/cluster.sh) one
  // alone loads each link with at most n: 8 s. Together ranks 1-6 receive in
  // all eight chains (from the rank above, or as the root): 64 s, no gain
  // over 8 x 8 s.
  net.reduce_algorithm = ReduceAlgorithm::Chain;
  CHECK_THAT(net.call_seconds(calls[0], 8, nodes), WithinRel(8.0, 1e-12));
  loads.clear();
  for (const PlannedCall& c : calls) loads.push_back(net.call_load(c, 8, nodes));
  group.clear();
  for (const LinkLoad& l : loads) group.push_back({8.0, &l});
  LinkClock chains(link_count(nodes, 8));
  CHECK_THAT(chains.issue(group, 0), WithinRel(64.0, 1e-12));
}

TEST_CASE("libnbc's chain at 4 ranks: concurrent reduces gain nothing (rank 1 takes every chain)",
          "[model][concurrent]") {
  // vrank v -> v - 1 with the root swapped with rank 0: rank 1 receives in all
  // four chains rooted at 0..3, so four together take 4 x 1 s, as in series.
  NetworkModel net = slow_node_links();
  net.link.inter_latency_s = 0;
  net.open_mpi = true;
  net.reduce_algorithm = ReduceAlgorithm::Chain;
  const NodeMap nodes = NodeMap::uniform(4, 1);
  std::vector<LinkLoad> loads;
  for (int root = 0; root < 4; root++)
    loads.push_back(net.call_load({Phase::Backward, 0, Purpose::Gradients, Primitive::Reduce,
                                   DType::F32, 250000, root, "", 0},
                                  4, nodes));
  std::vector<std::pair<double, const LinkLoad*>> group;
  for (const LinkLoad& l : loads) group.push_back({1.0, &l});
  LinkClock clock(link_count(nodes, 4));
  CHECK_THAT(clock.issue(group, 0), WithinRel(4.0, 1e-12));
}

TEST_CASE("a rooted reduce alone: its busiest link by algorithm, root and world size",
          "[model][concurrent]") {
  NetworkModel net = slow_node_links();
  net.link.inter_latency_s = 0;
  net.open_mpi = true;
  net.reduce_algorithm = ReduceAlgorithm::LibnbcDefault;
  PlannedCall rd{Phase::Step, 0, Purpose::Gradients, Primitive::Reduce, DType::F32, 1000, 0, "", 0};
  const NodeMap three = NodeMap::uniform(3, 1);
  // 3 ranks, 4000 B, Rabenseifner with W' = 2: rank 0 sends its right half
  // (2000 B) to rank 1 and gets 4000 B back (rank 1's left half, then the
  // reduced right half); ranks 0 and 2 (vranks 0 and 1) swap halves, 2000 B
  // each way; rank 2 gathers its 2000 B to the root. Root 0 receives
  // 4000 + 2000 + 2000 B: 8 ms.
  CHECK_THAT(net.call_seconds(rd, 3, three), WithinRel(8e-3, 1e-12));
  // Root 1, a paired odd rank, takes vrank 0's place: rank 0 also hands it
  // its 2000 B block, and rank 2 gathers to it. Root 1 receives 2000 B three
  // times and rank 0 sends 2000 B three times: 6 ms.
  rd.root = 1;
  CHECK_THAT(net.call_seconds(rd, 3, three), WithinRel(6e-3, 1e-12));
  // Fewer elements than W' = 8 at 8 ranks: libnbc's binomial tree, the root
  // receiving from vranks 1, 2 and 4: 3 x 16 B.
  rd.root = 0;
  rd.count = 4;
  CHECK_THAT(net.call_seconds(rd, 8, NodeMap::uniform(8, 1)), WithinRel(48e-6, 1e-12));
  // A chain (NCCL, or the emulated cluster's libnbc): n on every link, 1 s.
  net.reduce_algorithm = ReduceAlgorithm::Chain;
  rd.count = 250000;
  CHECK_THAT(net.call_seconds(rd, 8, NodeMap::uniform(8, 1)), WithinRel(1.0, 1e-12));
  // The edges of Rabenseifner's reduce conserve the data: every rank but the
  // root sends, and the root's in link carries (W-1)/W n twice at W = 2^k.
  const std::vector<ReduceEdge> edges =
      reduce_edges(ReduceAlgorithm::LibnbcDefault, 16, 5, 1 << 20, 4);
  std::vector<double> in(16, 0), out(16, 0);
  for (const ReduceEdge& e : edges) {
    in[static_cast<size_t>(e.to)] += e.bytes;
    out[static_cast<size_t>(e.from)] += e.bytes;
  }
  const double n = 4.0 * (1 << 20);
  CHECK_THAT(in[5], WithinRel(2 * 15.0 / 16 * n, 1e-12));
  for (int r = 0; r < 16; r++)
    if (r != 5) CHECK(out[static_cast<size_t>(r)] > 0);
}

}  // namespace zt
