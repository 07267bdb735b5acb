// Tensor parallelism against the whole model: every rank of the world is one
// shard (T = W), runs the model on its shard's table through
// TensorParallelHooks over plain flat parameters, and must get the whole
// model's loss and, for its part of every tensor, the whole model's gradient,
// within fp32 rounding. Also what the split moves: the calls per micro-batch
// counted against the list worked out from the model's combine points; and
// the logits sampling reads, whole on every shard.
#include <mpi.h>

#include <cmath>
#include <vector>

#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/split_model.h"
#include "train/loop/init_weights.h"
#include "zero/analysis/tensor_plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/grid/tensor_parallel_hooks.h"

namespace zt {
namespace {

struct Pass {
  double loss = 0, eval_loss = 0;
  std::vector<float> grads;  // in the table's layout
  size_t calls_after_training = 0;
};

Pass run(const ParamTable& table, ModuleHooks& hooks, FlatHooks& flat, Ops& ops,
         Recompute recompute, const CountingCommunicator& comm) {
  const int B = 2, T = table.config().seq_len, N = B * T, V = table.config().vocab_size;
  std::vector<int> in(N), tgt(N);
  for (int i = 0; i < N; i++) {
    in[i] = (7 * i + 3) % V;
    tgt[i] = (5 * i + 11) % V;  // targets on every shard's rows
  }
  GPT model(table, ops, B, T, recompute);
  Pass p;
  p.loss = model.forward_backward(in.data(), tgt.data(), 1.0f / N, hooks);
  p.grads = flat.grads_f32();
  p.calls_after_training = comm.log().size();
  p.eval_loss = model.forward_loss(in.data(), tgt.data(), hooks);
  return p;
}

}  // namespace

TEST_CASE("a tensor-parallel model matches the whole model", "[mpi][tensor_parallel]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  auto ops = make_cpu_ops();
  CountingCommunicator comm(W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops));
  comm.keep_log();
  const GPTConfig c = divisible_model(8);
  const ParamTable whole(c), shard(c, TensorSplit{W, comm.rank()});
  std::vector<float> w(whole.total());
  init_gpt2_weights(whole, 5, w.data());
  // GPT-2 starts its biases at zero, and LayerNorms at one and zero: give
  // every tensor a pattern of its own, so that a bias added on every shard, or
  // a LayerNorm's parameters mixed up, changes the result.
  for (size_t i = 0; i < w.size(); i++) w[i] += 0.02f * static_cast<float>((i * 7) % 11) - 0.1f;

  for (Recompute recompute : {Recompute::None, Recompute::Block}) {
    FlatHooks whole_hooks(whole, *ops);
    whole_hooks.set_params(w);
    const Pass ref = run(whole, whole_hooks, whole_hooks, *ops, recompute, comm);

    FlatHooks shard_flat(shard, *ops);
    shard_flat.set_params(take_shard(whole, shard, w.data()));
    TensorParallelHooks hooks(shard_flat, shard, *ops, comm);
    const size_t calls_before = comm.log().size();
    const Pass got = run(shard, hooks, shard_flat, *ops, recompute, comm);

    CHECK(got.loss == Approx(ref.loss).epsilon(1e-5));
    CHECK(got.eval_loss == Approx(ref.eval_loss).epsilon(1e-5));
    CHECK(worst_relative(got.grads, take_shard(whole, shard, ref.grads.data())) <= 1e-5);

    // One forward_backward and one forward_loss. Per pass forward: the
    // embedding, 2 projections per layer (N*C each), the loss's log-sum-exp
    // (all-gather) and target logit (N floats); the backward: the LM head and
    // 2 input gradients per layer; block recompute re-runs each block's
    // attention projection (not the MLP's).
    const int L = c.n_layer;
    const size_t N = 2 * c.seq_len, NC = N * c.n_embd;
    const int recomputed = recompute == Recompute::Block ? L : 0;
    const size_t want_model_dtype_sums = 2 * (1 + 2 * L) + (1 + 2 * L) + recomputed;
    size_t sums = 0, float_sums = 0, gathers = 0;
    for (size_t i = calls_before; i < comm.log().size(); i++) {
      const CallRecord& r = comm.log()[i];
      if (r.primitive == Primitive::AllGather && r.count == N && r.dtype == DType::F32) gathers++;
      else if (r.primitive == Primitive::AllReduce && r.count == N && r.dtype == DType::F32)
        float_sums++;
      else if (r.primitive == Primitive::AllReduce && r.count == NC) sums++;
      else FAIL("unexpected call: " << primitive_name(r.primitive) << " of " << r.count);
    }
    if (W == 1) continue;  // the whole model combines nothing across shards
    CHECK(sums == want_model_dtype_sums);
    CHECK(float_sums == 2);
    CHECK(gathers == 2);
    // `plan` lists the training pass's calls call for call.
    const std::vector<PlannedCall> planned =
        plan_tensor_calls(GPT::combine_points(shard, recompute), shard, 1, N, ops->dtype(), false);
    // The last is the optimizer step's gradient norm, which this pass has no step for.
    REQUIRE(planned.size() == got.calls_after_training - calls_before + 1);
    CHECK(planned.back().phase == Phase::Step);
    for (size_t i = 0; i + 1 < planned.size(); i++) {
      const CallRecord& r = comm.log()[calls_before + i];
      INFO("call " << i << ": " << planned[i].what);
      CHECK(r.primitive == planned[i].primitive);
      CHECK(r.dtype == planned[i].dtype);
      CHECK(r.count == planned[i].count);
    }
    // Sampling's logits: every shard gets the whole vocabulary's row.
    const int T = c.seq_len;
    std::vector<int> prompt(T);
    for (int i = 0; i < T; i++) prompt[i] = (11 * i + 5) % c.vocab_size;
    GPT whole_model(whole, *ops, 1, T, Recompute::Block),
        shard_model(shard, *ops, 1, T, Recompute::Block);
    const std::vector<float> want_logits =
        whole_model.forward_logits(prompt.data(), 1, T, T - 1, whole_hooks);
    const std::vector<float> got_logits =
        shard_model.forward_logits(prompt.data(), 1, T, T - 1, hooks);
    REQUIRE(got_logits.size() == want_logits.size());
    CHECK(worst_relative(got_logits, want_logits) <= 1e-5);
  }
}

}  // namespace zt
