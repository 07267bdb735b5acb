// Pipeline parallelism against the whole model: every rank of the world is
// one stage (P = W), runs its stage's schedule through PipelineStage with a
// ZeRO stage 0 or 1 engine of its own (a data-parallel group of one), and
// must end the step with the whole model's loss and, for every tensor it
// holds (wte on both ends), the whole model's gradient summed over the
// micro-batches, within fp32 rounding; for both schedules, several
// micro-batch counts, with and without recompute. The optimizer step's
// gradient norm, summed over the stages with the last stage's wte copy left
// out, is the whole model's. Its messages and the norm's sum are the calls
// `plan` lists (plan_pipeline_calls), call for call.
#include <mpi.h>

#include <cmath>
#include <vector>

#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/nccl_order_communicator.h"
#include "tests/support/support_zero.h"
#include "train/loop/init_weights.h"
#include "train/loop/pipeline_step.h"
#include "zero/analysis/pipeline_plan.h"
#include "zero/analysis/plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

GPTConfig four_blocks() {
  GPTConfig c;
  c.n_layer = 4;  // up to 4 stages of the [mpi] runs
  c.n_head = 2;
  c.n_embd = 16;
  c.vocab_size = 29;
  c.seq_len = 6;
  return c;
}

void micro_batch(int k, int* in, int* tgt, int n, int V) {
  for (int i = 0; i < n; i++) {
    in[i] = (7 * i + 3 + 11 * k) % V;
    tgt[i] = (5 * i + 1 + 13 * k) % V;
  }
}

// The engine's gradient of every tensor of `table`, widened, in its layout.
std::vector<float> engine_grads(ZeroEngine& engine, const ParamTable& table, Ops& ops) {
  std::vector<float> out(table.total());
  for (size_t p = 0; p < table.params().size(); p++) {
    const ParamInfo& info = table.params()[p];
    ops.to_f32(out.data() + info.offset, engine.grad(static_cast<int>(p)), info.numel);
  }
  return out;
}

// Every schedule, micro-batch count, recompute level and ZeRO stage the
// pipeline takes, over `inner` (this rank's view of the world).
void check_every_case(Ops& ops, std::unique_ptr<Communicator> inner) {
  const int W = inner->world();
  CountingCommunicator world(std::move(inner));
  std::unique_ptr<CountingCommunicator> pipe =
      world.counted_subgroup(RankGroup{W, 1}, Dimension::Pipeline);
  world.keep_log();
  const GPTConfig c = four_blocks();
  const ParamTable whole(c);
  const ParamTable stage(c, TensorSplit{}, stage_split(c.n_layer, W, world.rank()));
  std::vector<float> w(whole.total());
  init_gpt2_weights(whole, 9, w.data());
  for (size_t i = 0; i < w.size(); i++) w[i] += 0.02f * static_cast<float>((i * 5) % 13) - 0.12f;
  const int B = 2, T = c.seq_len, N = B * T;
  // Each stage's ZeRO runs over a data-parallel group of one, counted into
  // `world` (its step annotates the phase, as in a run).
  std::unique_ptr<CountingCommunicator> alone =
      world.counted_subgroup(RankGroup{1, 1}, Dimension::Data);

  for (PipelineSchedule schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe})
    for (int m : {1, 3, 5})
      for (Recompute recompute : {Recompute::None, Recompute::Block})
        for (int zero_stage : {0, 1}) {
          INFO(pipeline_schedule_name(schedule)
               << ", " << m << " micro-batches, recompute " << recompute_name(recompute)
               << ", ZeRO stage " << zero_stage);
          const float dloss = 1.0f / (m * N);
          std::vector<int> in(N), tgt(N);
          // The whole model over the same micro-batches, on every rank.
          FlatHooks whole_hooks(whole, ops);
          whole_hooks.set_params(w);
          double whole_loss = 0;
          {
            GPT model(whole, ops, B, T, recompute);
            for (int k = 0; k < m; k++) {
              micro_batch(k, in.data(), tgt.data(), N, c.vocab_size);
              whole_loss += model.forward_backward(in.data(), tgt.data(), dloss, whole_hooks);
            }
          }
          const std::vector<float> whole_grads = whole_hooks.grads_f32();
          const std::vector<float> want = take_shard(whole, stage, whole_grads.data());
          double whole_squares = 0;
          for (float g : whole_grads) whole_squares += static_cast<double>(g) * g;

          ZeroConfig z;
          z.stage = zero_stage;
          ZeroSetup setup = engine_setup(z, stage, 0.0, "two", recompute);
          if (W > 1) setup.model_parallel = grid_parallel_norm(stage, nullptr, pipe.get());
          std::unique_ptr<ZeroEngine> engine = make_zero_engine(setup, stage, ops, *alone);
          const std::vector<float> mine = take_shard(whole, stage, w.data());
          engine->init_weights(mine.data());
          PipelineStage pipeline(schedule, m, *pipe, ops);
          GPT model(stage, ops, B, T, recompute, pipeline.slots());
          const size_t calls_before = world.log().size();
          const std::unique_ptr<StageCompute> compute = real_stage(model);
          const PipelineStepResult got = pipeline.train(
              *compute, *engine, *engine,
              [&](int k, int* in_k, int* tgt_k) { micro_batch(k, in_k, tgt_k, N, c.vocab_size); },
              dloss);

          if (pipeline.last()) CHECK(got.loss_sum == Approx(whole_loss).epsilon(1e-5));
          else CHECK(got.loss_sum == 0.0);
          const std::vector<float> grads = engine_grads(*engine, stage, ops);
          double worst = 0, scale = 0;
          for (size_t i = 0; i < want.size(); i++) {
            worst = std::max(worst, static_cast<double>(std::fabs(grads[i] - want[i])));
            scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
          }
          CHECK(worst <= 1e-5 * scale);

          const double norm = engine->step(OptimSettings{1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f}, 1);
          CHECK(norm == Approx(std::sqrt(whole_squares)).epsilon(1e-5));

          // The messages and the norm's sum, as `plan` lists them.
          const bool overflow_check =
              plan_step(setup, stage, 1, m, ops.dtype(), NodeMap::uniform(1, 1)).overflow_check;
          const std::vector<PlannedCall> planned = plan_pipeline_calls(
              pipeline.actions(), pipeline.stage(), W, m, model.boundary_elems(),
              stage.params().front().numel, ops.dtype(), overflow_check);
          std::vector<CallRecord> pipeline_calls;
          for (size_t i = calls_before; i < world.log().size(); i++)
            if (world.log()[i].dimension == Dimension::Pipeline)
              pipeline_calls.push_back(world.log()[i]);
          REQUIRE(pipeline_calls.size() == planned.size());
          for (size_t i = 0; i < planned.size(); i++) {
            const CallRecord& r = pipeline_calls[i];
            INFO("message " << i << ": " << planned[i].what);
            CHECK(r.primitive == planned[i].primitive);
            CHECK(r.count == planned[i].count);
            CHECK(r.root == planned[i].root);
            CHECK(r.micro == planned[i].micro);
            CHECK(r.phase == planned[i].phase);
            CHECK(r.purpose == planned[i].purpose);
            CHECK(r.dtype == planned[i].dtype);
          }
          MPI_Barrier(MPI_COMM_WORLD);
        }
}

}  // namespace

TEST_CASE("a pipeline's stages end the step with the whole model's gradients",
          "[mpi][pipeline_parallel]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  auto ops = make_cpu_ops();
  check_every_case(*ops, W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops));
}

// NCCL matches a pipeline's messages in posting order, completes a send only
// once its receive is posted and runs a rank's calls one after another: the
// same steps under those rules must finish (no rank waits on another that
// waits on it) with the same results. The NCCL communicator itself needs a
// GPU per rank; this checks the postings it is given.
TEST_CASE("a pipeline's messages finish under NCCL's matching and stream order",
          "[mpi][pipeline_parallel][nccl_order]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W == 1) return;  // one stage sends nothing
  auto ops = make_cpu_ops();
  check_every_case(*ops, std::make_unique<NcclOrderCommunicator>(make_mpi_communicator(*ops)));
}

}  // namespace zt
