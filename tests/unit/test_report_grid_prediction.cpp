// report's prediction of a grid run (train/report/report_prediction.h): the
// compute's whole-model micro-step and optimizer set the grid model's rates,
// so on a network that costs nothing the step is worked out by hand from
// them; the schedule reaches the model; what the grid model cannot time is
// refused with its reason.
#include <string>

#include "model/param_table.h"
#include "tests/support/catch.h"
#include "train/report/report_prediction.h"

namespace zt {
namespace {

Config grid_config(int tensor, int pipeline) {
  Config c;
  c.model.n_layer = 4;
  c.model.n_head = 4;
  c.model.n_embd = 64;
  c.model.vocab_size = 256;
  c.model.seq_len = 32;
  c.train.micro_batch = 2;
  c.parallel.tensor = tensor;
  c.parallel.pipeline = pipeline;
  return c;
}

// Links that move any message in no time.
NetworkModel free_network() {
  NetworkModel n;
  n.source = "free";
  n.link.intra_node_bytes_per_s = n.link.inter_node_bytes_per_s = 1e30;
  n.link.intra_latency_s = n.link.inter_latency_s = 0;
  return n;
}

ComputeChoice stated(double micro_ms, double optimizer_ms) {
  ComputeChoice c;
  c.times.micro_step_s = micro_ms * 1e-3;
  c.times.optimizer_s = optimizer_ms * 1e-3;
  c.label = "emulated compute (stated)";
  return c;
}

}  // namespace

TEST_CASE("a grid run's prediction takes its rates from the whole model's compute",
          "[report][grid_projection]") {
  GridStepPrediction p;
  std::string why;
  // One rank, m = 3: three whole micro-steps (40 ms) and the whole optimizer (8 ms).
  REQUIRE(
      predict_grid_run(grid_config(1, 1), 1, 1, 3, free_network(), stated(40, 8), {}, &p, &why));
  CHECK(p.step_s == Approx(3 * 0.040 + 0.008));
  // T = 2 on 2 ranks: each shard does half the FLOPs (20 ms a micro-step);
  // its optimizer runs over its own tensors, the shard's table.
  const double shard = static_cast<double>(ParamTable(grid_config(1, 1).model, {2, 0}).total()) /
                       static_cast<double>(ParamTable(grid_config(1, 1).model).total());
  REQUIRE(
      predict_grid_run(grid_config(2, 1), 2, 2, 3, free_network(), stated(40, 8), {}, &p, &why));
  CHECK(p.step_s == Approx(3 * 0.020 + 0.008 * shard));
  // The schedule reaches the model: on a slow link GPipe's burst of messages
  // queues, 1F1B's do not, so their steps differ.
  NetworkModel slow = free_network();
  slow.link.inter_node_bytes_per_s = 1e6;
  GridStepPrediction gpipe;
  Config g = grid_config(1, 2);
  REQUIRE(predict_grid_run(g, 2, 1, 8, slow, stated(40, 8), {}, &p, &why));
  g.parallel.pipeline_schedule = "gpipe";
  REQUIRE(predict_grid_run(g, 2, 1, 8, slow, stated(40, 8), {}, &gpipe, &why));
  CHECK(gpipe.step_s != Approx(p.step_s));
}

TEST_CASE("a grid run's gradients are reduced by its own path's primitive",
          "[report][grid_projection]") {
  // D = 2 x T = 2 on two nodes of two, stage 1 over a slow link: DeepSpeed's
  // default path all-reduces the stage's Ψ_s, twice the bytes of the
  // reduce-scatter that native_reduce_scatter selects; everything else is
  // the same.
  NetworkModel slow = free_network();
  slow.link.inter_node_bytes_per_s = 1e6;
  Config c = grid_config(2, 1);
  c.zero.stage = 1;
  GridStepPrediction all_reduce, reduce_scatter;
  std::string why;
  REQUIRE(predict_grid_run(c, 4, 2, 3, slow, stated(40, 8), {}, &all_reduce, &why));
  c.zero.native_reduce_scatter = true;
  REQUIRE(predict_grid_run(c, 4, 2, 3, slow, stated(40, 8), {}, &reduce_scatter, &why));
  // Ψ_s fp32 elements of the shard: the all-reduce's bus bytes per rank are
  // 2·(2-1)/2 of its 4·Ψ_s B, the reduce-scatter's half that; both far
  // outlast the backward that would hide them (2/3 of 20 ms). A node's two
  // data-parallel ranks share its 1 MB/s link, so the difference is
  // 2 x 4·Ψ_s/2 B at 1 MB/s.
  const double psi = static_cast<double>(ParamTable(c.model, {2, 0}).total());
  CHECK(all_reduce.data_exposed_s - reduce_scatter.data_exposed_s ==
        Approx(2 * 4 * psi / 2 / 1e6).epsilon(0.001));
}

TEST_CASE("what the grid model cannot time gets no prediction and says why", "[report]") {
  GridStepPrediction p;
  std::string why;
  NetworkModel curves = free_network();
  curves.curves.push_back(CallCurve{});
  CHECK_FALSE(predict_grid_run(grid_config(2, 1), 2, 2, 3, curves, stated(40, 8), {}, &p, &why));
  CHECK(why.find("link figures") != std::string::npos);
  why.clear();
  Config data_inner = grid_config(2, 1);
  data_inner.parallel.rank_order = "data-inner";
  CHECK_FALSE(predict_grid_run(data_inner, 4, 2, 3, free_network(), stated(40, 8), {}, &p, &why));
  CHECK(why.find("data-inner") != std::string::npos);
  why.clear();
  ComputeChoice own = stated(40, 8);
  own.label = "own compute (not a prediction of compute): no stage-0 run";
  CHECK_FALSE(predict_grid_run(grid_config(1, 2), 2, 2, 3, free_network(), own, {}, &p, &why));
  CHECK(why.find("--compute-from") != std::string::npos);
}

}  // namespace zt
