// The grid step-time model (zero/analysis/grid_step_time.h): every expected
// value worked out by hand in the comment beside it, on clusters with round
// link figures, and the properties the model must keep.
#include <stdexcept>
#include <utility>
#include <vector>

#include "tests/support/catch.h"
#include "zero/analysis/grid_step_time.h"
#include "zero/analysis/step_time_model.h"

namespace zt {
namespace {

// L 4, a 4, C 64, V 256, 32 positions.
GPTConfig small_model() {
  GPTConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 64;
  c.vocab_size = 256;
  c.seq_len = 32;
  return c;
}

// The 7B shape of grid-projection: L 32, a 32, C 4096, V 50304, S 2048.
GPTConfig gpt_7b() {
  GPTConfig c;
  c.n_layer = 32;
  c.n_head = 32;
  c.n_embd = 4096;
  c.vocab_size = 50304;
  c.seq_len = 2048;
  return c;
}

// `nodes` x `per_node` GPUs: 100 GB/s per GPU in a node, 50 GB/s per node
// between nodes, 1 us and 10 us per ring step, 100 TFLOP/s, 1 TB/s, 80 GB.
GridCluster round_cluster(int nodes, int per_node) {
  GridCluster k;
  k.nodes = nodes;
  k.gpus_per_node = per_node;
  k.link.intra_node_bytes_per_s = 100e9;
  k.link.inter_node_bytes_per_s = 50e9;
  k.link.intra_latency_s = 1e-6;
  k.link.inter_latency_s = 10e-6;
  k.flops_per_s = 100e12;
  k.memory_bytes_per_s = 1e12;
  k.device_memory_bytes = 80e9;
  return k;
}

GridRun run(int dp, int tp, int pp, int m, int B, int S, int stage) {
  GridRun r;
  r.grid.dp = dp;
  r.grid.tp = tp;
  r.grid.pp = pp;
  r.grid.micro_batches = m;
  r.grid.micro_batch = B;
  r.grid.seq = S;
  r.zero_stage = stage;
  return r;
}

TEST_CASE("grid step time: one tensor all-reduce inside a node and across two",
          "[grid_projection]") {
  const GridCluster k = round_cluster(2, 4);
  // T = 4 in node 0, 1e6 bf16 elements: payload 2e6 B, bus 2e6 x 2·3/4 = 3e6 B
  // at 100 GB/s = 30 us, plus 2(4-1) = 6 ring steps of 1 us: 36 us.
  CHECK(grid_call_seconds(k, Primitive::AllReduce, DType::BF16, 1000000, RankGroup{4, 1}) ==
        Approx(36e-6));
  // T = 8 over both nodes: bus 2e6 x 2·7/8 = 3.5e6 B; the ring crosses at 3->4
  // and 7->0, a quarter of the ranks: a node's link carries 4 x 3.5e6 / 4 =
  // 3.5e6 B at 50 GB/s = 70 us (inside a node 35 us, the slower counts), plus
  // 14 ring steps of 10 us: 210 us.
  CHECK(grid_call_seconds(k, Primitive::AllReduce, DType::BF16, 1000000, RankGroup{8, 1}) ==
        Approx(210e-6));
}

TEST_CASE("grid step time: FLOPs per token per tensor rank", "[grid_projection]") {
  GridShape g;
  g.tp = 2;
  g.seq = 32;
  // 4 blocks x (72·64² + 12·32·64 = 294912 + 24576) + 6·256·64 = 98304 for the
  // head: 1376256, halved over T = 2: 688128.
  CHECK(stage_flops_per_token(small_model(), g, 0) == Approx(688128));
}

TEST_CASE("grid step time: tensor time of a micro-batch at T = 2", "[grid_projection]") {
  const GridCluster k = round_cluster(1, 2);
  const GridStepPrediction p = predict_grid_step(small_model(), run(1, 2, 1, 1, 1, 32, 0), k);
  // N·C = 32 x 64 = 2048 bf16 = 4096 B per all-reduce, T = 2: bus 4096 B, 41 ns
  // at 100 GB/s, 2 ring steps 2 us: 2.04096 us each; forward 1 + 2·4, backward
  // 1 + 2·4: 18 of them. Cross-entropy: an all-reduce of N fp32 (128 B: 2 us
  // + 1.28 ns) and an all-gather of N fp32 per rank (payload 256 B, bus 128 B,
  // 1 ring step: 1 us + 1.28 ns). After the flush, the gradient norm's one fp32
  // sum (bus 4 B, 2 ring steps: 2 us + 0.04 ns).
  const double expected =
      18 * (2e-6 + 4096 / 100e9) + (2e-6 + 128 / 100e9) + (1e-6 + 128 / 100e9) + (2e-6 + 4 / 100e9);
  CHECK(p.tensor_s == Approx(expected));
}

TEST_CASE("grid step time: tensor calls from curves measured over the tensor groups",
          "[grid_projection]") {
  GridCluster k = round_cluster(1, 2);
  auto curve = [](Primitive p, DType t, std::vector<double> bytes, std::vector<double> s) {
    return CallCurve{p, t, std::move(bytes), std::move(s)};
  };
  k.tensor_curves = {curve(Primitive::AllReduce, DType::BF16, {1000, 10000}, {10e-6, 100e-6}),
                     curve(Primitive::AllReduce, DType::F32, {1000, 10000}, {20e-6, 200e-6})};
  // An all-gather's curve missing: one line naming it.
  CHECK_THROWS_WITH(predict_grid_step(small_model(), run(1, 2, 1, 1, 1, 32, 0), k),
                    Catch::Contains("no all_gather fp32 curve"));
  k.tensor_curves.push_back(curve(Primitive::AllGather, DType::F32, {100, 1000}, {5e-6, 50e-6}));
  const GridStepPrediction p = predict_grid_step(small_model(), run(1, 2, 1, 1, 1, 32, 0), k);
  // The 18 bf16 all-reduces of 4096 B: 10 + (4096 - 1000)/9000 x 90 = 40.96 us
  // each. Cross-entropy's fp32 all-reduce of 128 B and the norm's of 4 B: below
  // the first point, 20 us each. Its all-gather, payload 256 B: 5 + 156/900 x
  // 45 = 12.8 us. The link figures no longer count.
  CHECK(p.tensor_s == Approx(18 * 40.96e-6 + 20e-6 + 12.8e-6 + 20e-6));
}

TEST_CASE("grid step time: a pipeline's makespan is the bubble formula", "[grid_projection]") {
  GridCluster k = round_cluster(1, 4);
  k.link.intra_node_bytes_per_s = 1e21;  // messages and the tied all-reduce: no time
  k.link.intra_latency_s = 0;
  const GridStepPrediction p = predict_grid_step(small_model(), run(1, 1, 4, 8, 1, 32, 0), k);
  // The last stage (1 block and the head) is the slowest: (294912 + 24576 +
  // 98304) x 32 tokens = 13369344 FLOPs at 100 TFLOP/s = 133.69344 us per
  // micro-batch. 1F1B: (m + P - 1) x that = 11 x 133.69344 us. Then the first
  // stage's optimizer, the most state: 49984 (block) + 16384 (wte) + 2048
  // (wpe) = 68416 elements x 32 B at 1 TB/s = 2.189312 us.
  const double micro = 13369344 / 100e12, optimizer = 68416 * 32 / 1e12;
  CHECK(p.step_s == Approx(11 * micro + optimizer));
  CHECK(p.optimizer_s == Approx(optimizer));
  // The bubble (P - 1)/(m + P - 1) of the makespan.
  CHECK(p.bubble_s == Approx(3.0 / 11 * (11 * micro)));
  CHECK(p.compute_s == Approx(8 * micro + optimizer));
  CHECK(p.step_s ==
        Approx(p.compute_s + p.bubble_s + p.tensor_s + p.pipeline_s + p.data_exposed_s));
}

TEST_CASE("grid step time: each pipeline boundary's messages at its own link",
          "[grid_projection]") {
  const GridCluster k = round_cluster(2, 4);
  const double bytes = 1e6;
  const double intra = 1e-6 + bytes / 100e9;
  // D = 2, P = 4 on 2 x 4: stages 0 and 1 on node 0, 2 and 3 on node 1; only
  // boundary 1 crosses, both of stage 1's ranks sending over node 0's link.
  const GridShape g = run(2, 1, 4, 4, 1, 32, 1).grid;
  CHECK(pipeline_message_seconds(k, g, bytes, 0) == Approx(intra));
  CHECK(pipeline_message_seconds(k, g, bytes, 1) == Approx(10e-6 + bytes * 2 / 50e9));
  CHECK(pipeline_message_seconds(k, g, bytes, 2) == Approx(intra));
  // D = 4, P = 2: all four of node 0's ranks send across at once.
  CHECK(pipeline_message_seconds(k, run(4, 1, 2, 4, 1, 32, 1).grid, bytes, 0) ==
        Approx(10e-6 + bytes * 4 / 50e9));
  // D = 2, P = 3 on 2 x 3: stage 0 = ranks 0-1 and rank 2 of stage 1 on
  // node 0, rank 3 of stage 1 and stage 2 (4-5) on node 1. Boundary 0: rank
  // 1's peer 3 is on node 1, rank 0's peer 2 is not: one sender. Boundary 1:
  // rank 2's peer 4 crosses from node 0, rank 3's peer 5 stays on node 1.
  const GridShape odd = run(2, 1, 3, 4, 1, 32, 1).grid;
  const GridCluster six = round_cluster(2, 3);
  CHECK(pipeline_message_seconds(six, odd, bytes, 0) == Approx(10e-6 + bytes / 50e9));
  CHECK(pipeline_message_seconds(six, odd, bytes, 1) == Approx(10e-6 + bytes / 50e9));
}

TEST_CASE("grid step time: T = P = 1 at stage 0 is the data-parallel model's step",
          "[grid_projection]") {
  const GridCluster k = round_cluster(2, 4);
  const GPTConfig c = small_model();
  const int m = 3;
  const GridStepPrediction p = predict_grid_step(c, run(8, 1, 1, m, 2, 32, 0), k);
  // step_time_model.h on the same inputs: one gradient all-reduce of the whole
  // model after the last backward, the optimizer over the whole model after it.
  // Ψ = 4 x 49984 + 256·64 + 32·64 + 2·64 = 218496.
  StepPlan plan;
  plan.stage = 0;
  PlannedCall grads{};
  grads.phase = Phase::Backward;
  grads.micro = m - 1;
  grads.purpose = Purpose::Gradients;
  grads.primitive = Primitive::AllReduce;
  grads.dtype = DType::BF16;
  grads.count = 218496;
  grads.root = -1;
  grads.at = 1.0;
  plan.steady_step.push_back(grads);
  NetworkModel net;
  net.link = k.link;
  ComputeTimes compute;
  compute.micro_step_s = stage_flops_per_token(c, run(8, 1, 1, m, 2, 32, 0).grid, 0) * 64 / 100e12;
  compute.optimizer_s = 218496 * 32 / 1e12;
  const StepTimePrediction dp = predict_step(plan, 8, m, NodeMap::uniform(8, 4), net, compute);
  CHECK(p.step_s == Approx(dp.step_s));
  CHECK(p.data_exposed_s == Approx(dp.exposed_s));
  CHECK(p.bubble_s == Approx(0).margin(1e-15));
}

TEST_CASE("grid step time: stage 2's reduce-scatter stalls each backward by what outlasts it",
          "[grid_projection]") {
  const GridCluster k = round_cluster(2, 4);
  const GridStepPrediction p = predict_grid_step(small_model(), run(8, 1, 1, 2, 1, 32, 2), k);
  // Ψ = 218496 bf16 (436992 B) over D = 8 on 2 nodes: bus 436992 x 7/8 =
  // 382368 B; a quarter of the ring crosses, a node link carries 4 x 382368 /
  // 4 B at 50 GB/s = 7.64736 us (inside a node 3.82 us); 7 steps of 10 us:
  // 77.64736 us, for the reduce-scatter and for the all-gather alike.
  const double call = 70e-6 + 7.64736e-6;
  // A micro-batch: 1376256 FLOPs per token x 32 = 44040192 at 100 TFLOP/s;
  // its backward 2/3 of that hides part of each reduce-scatter.
  const double micro = 44040192 / 100e12;
  const double exposed_per_backward = call - micro * 2 / 3;
  // After the step's optimizer (27312 elements x 32 B at 1 TB/s), the all-gather.
  const double optimizer = 27312 * 32 / 1e12;
  CHECK(p.data_exposed_s == Approx(2 * exposed_per_backward + call));
  CHECK(p.step_s == Approx(2 * micro + 2 * exposed_per_backward + optimizer + call));
}

TEST_CASE("grid step time: DeepSpeed's all-reduce path at stage 2 reduces the whole Ψ",
          "[grid_projection]") {
  const GridCluster k = round_cluster(2, 4);
  GridRun r = run(8, 1, 1, 2, 1, 32, 2);
  r.gradient_reduce = Primitive::AllReduce;
  const GridStepPrediction p = predict_grid_step(small_model(), r, k);
  // As above, but an all-reduce of Ψ = 436992 B: bus 436992 x 2·7/8 = 764736 B,
  // a node link carries a quarter of 4 x that, 764736 B at 50 GB/s =
  // 15.29472 us; 14 steps of 10 us: 155.29472 us in each backward.
  const double all_reduce = 140e-6 + 15.29472e-6, all_gather = 70e-6 + 7.64736e-6;
  const double micro = 44040192 / 100e12;
  CHECK(p.data_exposed_s == Approx(2 * (all_reduce - micro * 2 / 3) + all_gather));
  r.gradient_reduce = Primitive::Broadcast;
  CHECK_THROWS_WITH(predict_grid_step(small_model(), r, k),
                    Catch::Contains("expected reduce_scatter, all_reduce or reduce"));
}

TEST_CASE("grid step time: data-parallel calls from curves measured over the data groups",
          "[grid_projection]") {
  GridCluster k = round_cluster(2, 4);
  GridRun r = run(8, 1, 1, 2, 1, 32, 1);
  r.gradient_reduce = Primitive::AllReduce;
  k.data_curves = {CallCurve{Primitive::AllReduce, DType::BF16, {1e5, 1e6}, {1e-3, 1e-2}}};
  // An all-gather's curve missing: one line naming the group and the curve.
  CHECK_THROWS_WITH(predict_grid_step(small_model(), r, k),
                    Catch::Contains("data curves: no all_gather bf16 curve"));
  k.data_curves.push_back(CallCurve{Primitive::AllGather, DType::BF16, {1e5, 1e6}, {2e-3, 2e-2}});
  const GridStepPrediction p = predict_grid_step(small_model(), r, k);
  // Ψ = 218496 bf16: the gradients' all-reduce of 436992 B, 1 ms + 336992 /
  // 900000 x 9 ms = 4.36992 ms, less the last backward it overlaps; the
  // parameters' all-gather of 27312 elements per rank (payload 436992 B), 2 ms
  // + 336992 / 900000 x 18 ms = 8.73984 ms, exposed. The link figures no
  // longer count.
  const double micro = 44040192 / 100e12;
  CHECK(p.data_exposed_s == Approx(4.36992e-3 - micro * 2 / 3 + 8.73984e-3));
}

TEST_CASE("grid step time: 7B on one GPU does not fit 80 GB", "[grid_projection]") {
  const GridCluster k = round_cluster(1, 1);
  const GridStepPrediction p = predict_grid_step(gpt_7b(), run(1, 1, 1, 1, 1, 2048, 0), k);
  // Ψ = 32 x (12·4096² + 13·4096 = 201379840) + 50304·4096 + 2048·4096 +
  // 2·4096 = 6658596864; 16 B each = 106537549824. Activations (Korthikanti,
  // no tensor parallelism): 32 blocks x 2048·4096·(34 + 5·32·2048/4096 = 114)
  // = 30601641984. 137.1 GB > 80 GB.
  CHECK(p.memory_bytes == Approx(106537549824.0 + 30601641984.0));
  CHECK_FALSE(p.fits);
}

TEST_CASE("grid step time: raising T inside a node lowers memory per GPU", "[grid_projection]") {
  const GridCluster k = round_cluster(1, 8);
  for (int stage = 0; stage <= 3; stage++) {
    double before = 0;
    for (int tp : {1, 2, 4, 8}) {
      const GridStepPrediction p =
          predict_grid_step(gpt_7b(), run(8 / tp, tp, 1, 1, 1, 2048, stage), k);
      if (tp > 1) CHECK(p.memory_bytes < before);
      before = p.memory_bytes;
    }
  }
}

TEST_CASE("grid step time: DeepSpeed's pipeline engine refuses stages 2 and 3",
          "[grid_projection]") {
  const GridCluster k = round_cluster(1, 4);
  CHECK_FALSE(predict_grid_step(small_model(), run(2, 1, 2, 2, 1, 32, 1), k).deepspeed_refuses);
  CHECK(predict_grid_step(small_model(), run(2, 1, 2, 2, 1, 32, 2), k).deepspeed_refuses);
  CHECK(predict_grid_step(small_model(), run(2, 1, 2, 2, 1, 32, 3), k).deepspeed_refuses);
  // Without a pipeline there is nothing to refuse.
  CHECK_FALSE(predict_grid_step(small_model(), run(4, 1, 1, 2, 1, 32, 3), k).deepspeed_refuses);
}

TEST_CASE("grid step time: a grid that does not cover the cluster is refused",
          "[grid_projection]") {
  CHECK_THROWS_AS(predict_grid_step(small_model(), run(1, 2, 1, 1, 1, 32, 0), round_cluster(1, 4)),
                  std::invalid_argument);
  CHECK_THROWS_AS(predict_grid_step(small_model(), run(1, 3, 1, 1, 1, 32, 0), round_cluster(1, 3)),
                  std::invalid_argument);
}

}  // namespace
}  // namespace zt
