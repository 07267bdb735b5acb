// [gpu_mpi] (under `mpirun -np 2` or 4 on one GPU; at W = 1 one stage holds
// every block): the CUDA backend's pipeline, P = W, its messages through the
// MPI communicator on device buffers, against the CPU backend's whole model
// over the same micro-batches. Both schedules at ZeRO stages 0 and 1: the last
// stage's loss and every stage's gradient of each tensor it holds (wte on
// both ends, summed between them) within bf16 tolerance (the bounds of the
// single-GPU model test). Without a GPU each test prints a SKIPPED line and
// passes.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/support_zero.h"
#include "tests/support/zero_harness.h"
#include "train/loop/pipeline_step.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/grid/pipeline_schedule.h"
#include "zero/stages/model_parallel_norm.h"

namespace zt {

TEST_CASE("the CUDA pipeline matches the CPU whole model", "[gpu_mpi]") {
  SKIP_WITHOUT_GPU();
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  // 4 blocks (up to 4 stages), 2 heads of 32 (the CUDA attention's smallest).
  GPTConfig c;
  c.n_layer = 4;
  c.n_head = 2;
  c.n_embd = 64;
  c.vocab_size = 200;
  c.seq_len = 64;
  const int B = 2, T = c.seq_len, N = B * T, m = 3;
  const unsigned seed = rank0_seed();
  std::mt19937 rng(seed);
  const ParamTable whole(c);
  const std::vector<float> w = jittered_gpt2_weights(whole, rng);
  std::vector<std::vector<int>> in, tgt;
  for (int k = 0; k < m; k++) {
    in.push_back(random_tokens(N, c.vocab_size, rng));
    tgt.push_back(random_tokens(N, c.vocab_size, rng));
  }
  INFO("seed " << seed << ", P = " << W);
  const float dloss = 1.0f / (m * N);

  // The reference: the whole model on the CPU, gradients summed over the micro-batches.
  auto cpu = make_cpu_ops();
  FlatHooks whole_hooks(whole, *cpu);
  whole_hooks.set_params(w);
  double want_loss = 0;
  {
    GPT model(whole, *cpu, B, T, Recompute::None);
    for (int k = 0; k < m; k++)
      want_loss += model.forward_backward(in[k].data(), tgt[k].data(), dloss, whole_hooks);
  }
  const std::vector<float> want_grads = whole_hooks.grads_f32();

  auto gpu = make_cuda_ops(0);
  CountingCommunicator world(W == 1 ? make_single_communicator(*gpu) : make_mpi_communicator(*gpu));
  std::unique_ptr<CountingCommunicator> pipe =
      world.counted_subgroup(RankGroup{W, 1}, Dimension::Pipeline);
  std::unique_ptr<CountingCommunicator> alone =
      world.counted_subgroup(RankGroup{1, 1}, Dimension::Data);
  const ParamTable stage(c, TensorSplit{}, stage_split(c.n_layer, W, world.rank()));
  const std::vector<float> want = take_shard(whole, stage, want_grads.data());
  const std::vector<float> mine = take_shard(whole, stage, w.data());

  for (PipelineSchedule schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe})
    for (int zero_stage : {0, 1}) {
      INFO(pipeline_schedule_name(schedule) << ", ZeRO stage " << zero_stage);
      ZeroConfig z;
      z.stage = zero_stage;
      ZeroSetup setup = engine_setup(z, stage, 0.0);
      if (W > 1) setup.model_parallel = grid_parallel_norm(stage, nullptr, pipe.get());
      std::unique_ptr<ZeroEngine> engine = make_zero_engine(setup, stage, *gpu, *alone);
      engine->init_weights(mine.data());
      PipelineStage pipeline(schedule, m, *pipe, *gpu);
      GPT model(stage, *gpu, B, T, Recompute::None, pipeline.slots());
      const std::unique_ptr<StageCompute> compute = real_stage(model);
      const PipelineStepResult got = pipeline.train(
          *compute, *engine, *engine,
          [&](int k, int* in_k, int* tgt_k) {
            std::copy(in[k].begin(), in[k].end(), in_k);
            std::copy(tgt[k].begin(), tgt[k].end(), tgt_k);
          },
          dloss);

      bool ok = !pipeline.last() || std::abs(got.loss_sum - want_loss) <= 1e-2 * want_loss;
      if (!ok) UNSCOPED_INFO("loss " << got.loss_sum << " against " << want_loss);
      for (size_t p = 0; p < stage.params().size(); p++) {
        const ParamInfo& info = stage.params()[p];
        // Widened on the device, then copied down.
        std::vector<float> a(info.numel);
        void* widened = gpu->alloc(info.numel * sizeof(float), MemCategory::Grads);
        gpu->to_f32(static_cast<float*>(widened), engine->grad(static_cast<int>(p)), info.numel);
        gpu->to_host(a.data(), widened, info.numel * sizeof(float));
        gpu->release(widened);
        const std::vector<float> b(want.begin() + info.offset,
                                   want.begin() + info.offset + info.numel);
        const double err = rel_l2(a, b);
        if (err >= 3e-2) {
          UNSCOPED_INFO(info.name << ": relative L2 error " << err);
          ok = false;
        }
      }
      CHECK(all_ranks(ok));
    }
}

}  // namespace zt
