// [gpu_mpi] (under `mpirun -np 2` on one GPU; at W = 1 the split is trivial):
// the CUDA backend's tensor-parallel model, T = W, ranks joined by the MPI
// communicator on device buffers, against the CPU backend's whole model on the
// same weights and tokens. With and without sequence parallelism, the loss and
// each rank's part of every gradient must match within bf16 tolerance (the
// bounds of the single-GPU model test), and the calls must be the ones `plan`
// lists. Without a GPU each test prints a SKIPPED line and passes.
#include <mpi.h>

#include <random>
#include <vector>

#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/zero_harness.h"
#include "zero/analysis/tensor_plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/grid/tensor_parallel_hooks.h"

namespace zt {

TEST_CASE("the CUDA tensor-parallel model matches the CPU whole model", "[gpu_mpi]") {
  SKIP_WITHOUT_GPU();
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  // 4 heads of 32 (the smallest head size the CUDA attention supports) and
  // 1000 vocabulary rows: divisible by W = 1, 2 and 4.
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 128;
  c.vocab_size = 1000;
  c.seq_len = 64;
  const int B = 4, T = c.seq_len, N = B * T;
  const unsigned seed = rank0_seed();
  std::mt19937 rng(seed);
  const ParamTable whole(c);
  const std::vector<float> w = jittered_gpt2_weights(whole, rng);
  const std::vector<int> in = random_tokens(N, c.vocab_size, rng),
                         tgt = random_tokens(N, c.vocab_size, rng);
  INFO("seed " << seed << ", W = " << W);

  auto cpu = make_cpu_ops();
  FlatHooks whole_hooks(whole, *cpu);
  whole_hooks.set_params(w);
  GPT whole_model(whole, *cpu, B, T, Recompute::None);
  const double want_loss =
      whole_model.forward_backward(in.data(), tgt.data(), 1.0f / N, whole_hooks);
  const std::vector<float> want_grads = whole_hooks.grads_f32();

  for (bool sequence_parallel : {false, true}) {
    INFO((sequence_parallel ? "sequence parallel" : "tensor parallel"));
    auto gpu = make_cuda_ops(0);
    CountingCommunicator comm(W == 1 ? make_single_communicator(*gpu)
                                     : make_mpi_communicator(*gpu));
    comm.keep_log();
    const ParamTable shard(c, TensorSplit{W, comm.rank(), sequence_parallel});
    FlatHooks shard_flat(shard, *gpu);
    shard_flat.set_params(take_shard(whole, shard, w.data()));
    TensorParallelHooks hooks(shard_flat, shard, *gpu, comm);
    GPT model(shard, *gpu, B, T, Recompute::None);
    const double loss = model.forward_backward(in.data(), tgt.data(), 1.0f / N, hooks);
    const std::vector<float> got_grads = shard_flat.grads_f32();
    const std::vector<float> want_shard = take_shard(whole, shard, want_grads.data());

    bool ok = std::abs(loss - want_loss) <= 1e-2 * std::abs(want_loss);
    INFO("loss " << loss << " against " << want_loss);
    for (const ParamInfo& p : shard.params()) {
      const std::vector<float> a(got_grads.begin() + p.offset,
                                 got_grads.begin() + p.offset + p.numel);
      const std::vector<float> b(want_shard.begin() + p.offset,
                                 want_shard.begin() + p.offset + p.numel);
      const double err = rel_l2(a, b);
      if (err >= 3e-2) {
        UNSCOPED_INFO(p.name << ": relative L2 error " << err);
        ok = false;
      }
    }
    CHECK(all_ranks(ok));

    // The calls are `plan`'s, call for call (its last, the optimizer step's
    // gradient norm, has no step in this pass).
    const std::vector<PlannedCall> planned = plan_tensor_calls(
        GPT::combine_points(shard, Recompute::None), shard, 1, N, gpu->dtype(), false);
    if (W == 1) continue;  // one shard combines nothing
    bool same = planned.size() == comm.log().size() + 1;
    for (size_t i = 0; same && i < comm.log().size(); i++) {
      const CallRecord& r = comm.log()[i];
      same = r.primitive == planned[i].primitive && r.dtype == planned[i].dtype &&
             r.count == planned[i].count;
      if (!same) UNSCOPED_INFO("call " << i << " differs from plan: " << planned[i].what);
    }
    CHECK(all_ranks(same));
  }
}

}  // namespace zt
