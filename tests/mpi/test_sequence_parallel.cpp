// Sequence parallelism against the whole model: every rank of the world is
// one shard (T = W) that keeps its N/W rows of the residual stream, and must
// get the whole model's loss and, for its part of every tensor, the whole
// model's gradient (the LayerNorms' summed over the shards), at every
// recompute level. Also what it moves, call for call against `plan` and in
// totals against the counts worked out below by hand; the activation ledger
// against activation_bytes(); and sampling's logits over a window whose
// tokens do not split evenly (the pass is padded).
#include <mpi.h>

#include <cmath>
#include <vector>

#include "model/activation_memory.h"
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

TEST_CASE("a sequence-parallel model matches the whole model", "[mpi][tensor_parallel]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  auto ops = make_cpu_ops();
  CountingCommunicator comm(W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops));
  comm.keep_log();
  const GPTConfig c = divisible_model(12);  // B x 12 tokens split into 1..4 equal parts
  const ParamTable whole(c), shard(c, TensorSplit{W, comm.rank(), true});
  std::vector<float> w(whole.total());
  init_gpt2_weights(whole, 9, w.data());
  // Every tensor gets a pattern of its own (GPT-2 starts biases at zero and
  // LayerNorms at one), so a bias or position added on every shard, or a
  // LayerNorm gradient left partial, changes the result.
  for (size_t i = 0; i < w.size(); i++) w[i] += 0.02f * static_cast<float>((i * 5) % 13) - 0.12f;
  const int B = 2, T = c.seq_len, N = B * T, V = c.vocab_size, L = c.n_layer;
  std::vector<int> in(N), tgt(N);
  for (int i = 0; i < N; i++) {
    in[i] = (7 * i + 3) % V;
    tgt[i] = (5 * i + 11) % V;
  }

  for (Recompute recompute : {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block}) {
    INFO("W " << W << ", recompute " << recompute_name(recompute));
    FlatHooks whole_hooks(whole, *ops);
    whole_hooks.set_params(w);
    GPT whole_model(whole, *ops, B, T, recompute);
    const double want_loss =
        whole_model.forward_backward(in.data(), tgt.data(), 1.0f / N, whole_hooks);
    const std::vector<float> want_grads = whole_hooks.grads_f32();
    const double want_eval = whole_model.forward_loss(in.data(), tgt.data(), whole_hooks);

    FlatHooks shard_flat(shard, *ops);
    shard_flat.set_params(take_shard(whole, shard, w.data()));
    TensorParallelHooks hooks(shard_flat, shard, *ops, comm);
    const uint64_t before = ops->ledger().current(MemCategory::Activations);
    GPT model(shard, *ops, B, T, recompute);
    // The ledger holds what the formula says: the residual stream at N/W rows.
    CHECK(ops->ledger().current(MemCategory::Activations) - before ==
          activation_bytes(c, B, T, recompute, DType::F32, W, true));
    CHECK(model.boundary_elems() == static_cast<size_t>(N / W) * c.n_embd);
    const size_t calls_before = comm.log().size();
    const double loss = model.forward_backward(in.data(), tgt.data(), 1.0f / N, hooks);
    const size_t calls_after_training = comm.log().size();
    CHECK(loss == Approx(want_loss).epsilon(1e-5));
    CHECK(worst_relative(shard_flat.grads_f32(), take_shard(whole, shard, want_grads.data())) <=
          1e-5);
    CHECK(model.forward_loss(in.data(), tgt.data(), hooks) == Approx(want_eval).epsilon(1e-5));
    if (W == 1) continue;  // one shard splits nothing

    // Per pass, forward: a reduce-scatter of the embedding and after each of
    // the 2L projections, an all-gather of each of the 2L + 1 LayerNorm
    // outputs. Backward: the mirror (2L + 1 reduce-scatters of input
    // gradients, 2L + 1 all-gathers of output gradients), 2L + 1 all-gathers
    // of the kept rows of ln_1's, ln_2's and ln_f's outputs again for the
    // weight gradients of the projections and the LM head after them, and one
    // all-reduce of 2C per
    // LayerNorm. Recompute re-runs ln_1's gather (attn), ln_2's (mlp), ln_1's
    // and ln_2's and the attention projection's scatter (block). Two passes:
    // training and evaluation.
    const size_t part = static_cast<size_t>(N / W) * c.n_embd;
    const size_t recomputed_gathers = recompute == Recompute::Block  ? 2 * L
                                      : recompute == Recompute::None ? 0
                                                                     : L;
    const size_t recomputed_scatters = recompute == Recompute::Block ? L : 0;
    size_t scatters = 0, gathers = 0, layernorm_sums = 0, lse_gathers = 0, float_sums = 0;
    for (size_t i = calls_before; i < comm.log().size(); i++) {
      const CallRecord& r = comm.log()[i];
      const bool f32 = r.dtype == DType::F32;  // the model dtype here too: count tells them apart
      if (r.primitive == Primitive::ReduceScatter && r.count == part) scatters++;
      else if (r.primitive == Primitive::AllGather && r.count == part) gathers++;
      else if (r.primitive == Primitive::AllGather && r.count == static_cast<size_t>(N) && f32)
        lse_gathers++;
      else if (r.primitive == Primitive::AllReduce && r.count == static_cast<size_t>(N) && f32)
        float_sums++;
      else if (r.primitive == Primitive::AllReduce && r.count == 2 * static_cast<size_t>(c.n_embd))
        layernorm_sums++;
      else FAIL("unexpected call: " << primitive_name(r.primitive) << " of " << r.count);
    }
    CHECK(scatters == 2 * (1 + 2 * L) + (2 * L + 1) + recomputed_scatters);
    CHECK(gathers == 2 * (2 * L + 1) + (2 * L + 1) + (2 * L + 1) + recomputed_gathers);
    CHECK(layernorm_sums == static_cast<size_t>(2 * L + 1));
    CHECK(lse_gathers == 2);
    CHECK(float_sums == 2);
    // `plan` lists the training pass's calls call for call (its last, the
    // step's gradient norm, has no step here).
    const std::vector<PlannedCall> planned =
        plan_tensor_calls(GPT::combine_points(shard, recompute), shard, 1, N, ops->dtype(), false);
    REQUIRE(planned.size() == calls_after_training - calls_before + 1);
    for (size_t i = 0; i + 1 < planned.size(); i++) {
      const CallRecord& r = comm.log()[calls_before + i];
      INFO("call " << i << ": " << planned[i].what);
      CHECK(r.primitive == planned[i].primitive);
      CHECK(r.dtype == planned[i].dtype);
      CHECK(r.count == planned[i].count);
    }
  }

  // Sampling: 7 tokens do not split into 2, 3 or 4 parts; the pass is padded
  // and every shard still gets the whole vocabulary's row at each position.
  const int t = 7;
  std::vector<int> prompt(t);
  for (int i = 0; i < t; i++) prompt[i] = (11 * i + 5) % V;
  FlatHooks whole_hooks(whole, *ops);
  whole_hooks.set_params(w);
  FlatHooks shard_flat(shard, *ops);
  shard_flat.set_params(take_shard(whole, shard, w.data()));
  TensorParallelHooks hooks(shard_flat, shard, *ops, comm);
  GPT whole_model(whole, *ops, 1, T, Recompute::Block),
      shard_model(shard, *ops, 1, T, Recompute::Block);
  for (int pos : {0, t - 1}) {
    INFO("W " << W << ", position " << pos);
    const std::vector<float> want =
        whole_model.forward_logits(prompt.data(), 1, t, pos, whole_hooks);
    const std::vector<float> got = shard_model.forward_logits(prompt.data(), 1, t, pos, hooks);
    REQUIRE(got.size() == want.size());
    CHECK(worst_relative(got, want) <= 1e-5);
  }
}

}  // namespace zt
