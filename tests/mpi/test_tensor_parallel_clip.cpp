// Gradient clipping with tensor parallelism: on every grid the world allows
// (T = W; at W = 4 also 2 data x 2 tensor ranks), each ZeRO stage's split run
// returns the whole model's gradient norm (one rank, the same data) and, with
// a threshold low enough to clip every step, ends with the whole model's
// weights, within fp32 rounding. Its tensor-group calls are `plan`'s, call
// for call: the combine points, then the norm's sum of squares (and the
// overflow flag, where the DeepSpeed release checks one).
#include <mpi.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/support/catch.h"
#include "tests/support/support_zero.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/plan.h"
#include "zero/analysis/tensor_plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/grid/grid.h"
#include "zero/grid/tensor_parallel_hooks.h"

namespace zt {
namespace {

constexpr int kMicroBatch = 2, kMicroSteps = 2, kClipSteps = 3;
constexpr double kLowClip = 0.05;

GPTConfig clip_model() {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 12;  // divisible by every T below (2, 3, 4)
  c.n_embd = 48;
  c.vocab_size = 96;
  c.seq_len = 8;
  return c;
}

// Sequence g of every step's batch: tokens on every shard's vocabulary rows.
void clip_sequence(int64_t g, int* in, int* tgt, int S, int V) {
  for (int i = 0; i < S; i++) {
    in[i] = static_cast<int>((13 * g + 7 * i + 3) % V);
    tgt[i] = static_cast<int>((5 * g + 5 * i + 11) % V);
  }
}

struct ClipRun {
  std::vector<double> norms;
  std::vector<float> weights;  // the table's flat layout, after the last step
};

// kClipSteps steps of D x kMicroSteps x kMicroBatch sequences; data rank d's
// micro-step m takes sequences (m D + d) B.. of the step. hooks: the engine
// itself, or the tensor-parallel hooks around it.
ClipRun train_clipped(ZeroEngine& engine, ModuleHooks& hooks, const ParamTable& table, Ops& ops,
                      Communicator& data, int micro_steps, CountingCommunicator* log_step0,
                      size_t* first_step_calls) {
  const int S = table.config().seq_len, V = table.config().vocab_size;
  const int D = data.world(), d = data.rank(), B = kMicroBatch;
  const float scale = 1.0f / static_cast<float>(D * micro_steps * B * S);
  // A large epsilon makes AdamW's update follow the gradient's size, so that
  // the clipping scale, and with it the norm, shows in the weights.
  const OptimSettings os{3e-3f, 0.9f, 0.95f, 1e-3f, 0.1f};
  GPT model(table, ops, B, S, Recompute::None);
  std::vector<int> in(B * S), tgt(B * S);
  ClipRun run;
  for (int step = 0; step < kClipSteps; step++) {
    for (int m = 0; m < micro_steps; m++) {
      const int64_t first = static_cast<int64_t>(step) * D * micro_steps * B + (m * D + d) * B;
      for (int b = 0; b < B; b++)
        clip_sequence(first + b, in.data() + b * S, tgt.data() + b * S, S, V);
      engine.begin_micro_step(m, micro_steps);
      model.forward_backward(in.data(), tgt.data(), scale, hooks);
      engine.end_micro_step();
    }
    run.norms.push_back(engine.step(os, step + 1));
    if (step == 0 && log_step0) *first_step_calls = log_step0->log().size();
  }
  run.weights = engine.gather_master(ops, data, table.total());
  return run;
}

std::vector<float> start_weights(const ParamTable& whole) {
  std::vector<float> w(whole.total());
  init_gpt2_weights(whole, 11, w.data());
  // Every tensor nonzero and distinct (GPT-2 starts biases at 0, LayerNorms at 1).
  for (size_t i = 0; i < w.size(); i++) w[i] += 0.02f * static_cast<float>((i * 7) % 11) - 0.1f;
  return w;
}

}  // namespace

TEST_CASE("tensor-parallel clipping: the whole model's norm and weights",
          "[mpi][tensor_parallel][clip]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  std::vector<Grid> grids;
  if (W > 1) grids.push_back(Grid{1, W, 1, RankOrder::TensorInnermost});
  if (W == 4) {
    grids.push_back(Grid{2, 2, 1, RankOrder::TensorInnermost});
    grids.push_back(Grid{2, 2, 1, RankOrder::DataInnermost});
  }
  if (grids.empty()) return;  // one rank splits nothing

  auto ops = make_cpu_ops();
  CountingCommunicator world(make_mpi_communicator(*ops));
  world.keep_log();
  const GPTConfig c = clip_model();
  const ParamTable whole(c);
  const std::vector<float> w = start_weights(whole);
  struct Variant {
    int stage;
    bool old_release;  // DeepSpeed 0.10.3 checks fp32 gradients for overflow (stages 1-3)
  };
  const Variant variants[] = {{0, false}, {1, false}, {2, false}, {3, false},
                              {1, true},  {2, true},  {3, true}};
  for (const Grid& grid : grids) {
    const int r = world.rank();
    const ParamTable shard(c, TensorSplit{grid.tensor, grid.tensor_index(r)});
    std::unique_ptr<CountingCommunicator> tensor =
        world.counted_subgroup(grid.tensor_group(), Dimension::Tensor);
    std::unique_ptr<CountingCommunicator> data =
        world.counted_subgroup(grid.data_group(), Dimension::Data);
    for (const Variant& v : variants) {
      INFO("grid " << grid.data << " data x " << grid.tensor << " tensor ("
                   << (grid.tensor_inner() ? "tensor-inner" : "data-inner") << "), stage "
                   << v.stage << (v.old_release ? ", DeepSpeed 0.10.3" : ""));
      ZeroConfig z;
      z.stage = v.stage;
      if (v.old_release) z.deepspeed_version = DeepSpeedRelease{0, 10, 3};

      // The whole model on this rank alone, over the whole batch.
      std::unique_ptr<Communicator> single = make_single_communicator(*ops);
      const ZeroSetup whole_setup = engine_setup(z, whole, kLowClip);
      std::unique_ptr<ZeroEngine> ref_engine = make_zero_engine(whole_setup, whole, *ops, *single);
      ref_engine->init_weights(w.data());
      const ClipRun ref = train_clipped(*ref_engine, *ref_engine, whole, *ops, *single,
                                        grid.data * kMicroSteps, nullptr, nullptr);
      for (double n : ref.norms) REQUIRE(n > 2 * kLowClip);  // every step clips

      ZeroSetup setup = engine_setup(z, shard, kLowClip);
      setup.model_parallel = tensor_parallel_norm(shard, *tensor);
      std::unique_ptr<ZeroEngine> engine = make_zero_engine(setup, shard, *ops, *data);
      engine->init_weights(take_shard(whole, shard, w.data()).data());
      TensorParallelHooks hooks(*engine, shard, *ops, *tensor);
      const size_t calls_before = world.log().size();
      size_t first_step_end = 0;
      const ClipRun got =
          train_clipped(*engine, hooks, shard, *ops, *data, kMicroSteps, &world, &first_step_end);

      bool norms_ok = got.norms.size() == ref.norms.size();
      std::ostringstream norms;
      for (size_t s = 0; norms_ok && s < got.norms.size(); s++) {
        norms << " step " << s << ": " << got.norms[s] << " (whole model " << ref.norms[s] << ")";
        norms_ok = std::abs(got.norms[s] - ref.norms[s]) <= 1e-5 * ref.norms[s];
      }
      INFO("norms:" << norms.str());
      CHECK(all_ranks(norms_ok));
      // This shard's weights in their places of the whole model's.
      std::vector<float> placed = ref.weights;
      put_shard(whole, shard, got.weights.data(), placed.data());
      const double err = rel_l2(placed, ref.weights);
      INFO("weights: relative L2 error " << err);
      CHECK(all_ranks(err < 1e-5));
      CHECK(rel_l2(ref.weights, w) > 1e-3);  // the steps moved the weights

      // The first step's tensor-group calls are plan's, in order.
      const StepPlan plan = plan_step(setup, shard, grid.data, kMicroSteps, DType::F32,
                                      NodeMap::uniform(grid.data, grid.data));
      CHECK(plan.overflow_check == v.old_release);
      const std::vector<PlannedCall> planned = plan_tensor_calls(
          GPT::combine_points(shard, Recompute::None), shard, kMicroSteps,
          static_cast<size_t>(kMicroBatch) * c.seq_len, DType::F32, plan.overflow_check);
      std::vector<CallRecord> measured;
      for (size_t i = calls_before; i < first_step_end; i++)
        if (world.log()[i].dimension == Dimension::Tensor) measured.push_back(world.log()[i]);
      REQUIRE(measured.size() == planned.size());
      for (size_t i = 0; i < planned.size(); i++) {
        INFO("call " << i << ": " << planned[i].what);
        CHECK(measured[i].primitive == planned[i].primitive);
        CHECK(measured[i].dtype == planned[i].dtype);
        CHECK(measured[i].count == planned[i].count);
        CHECK(measured[i].phase == planned[i].phase);
      }
    }
  }
}

}  // namespace zt
