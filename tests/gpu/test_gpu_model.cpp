// The whole model and ZeRO on the GPU. [gpu]: the CUDA model's loss and every
// parameter gradient against the CPU model on the same weights and batch, and
// bit-identical repeats; NCCL at W = 1 against the single-process communicator.
// [gpu_mpi] (under `mpirun -np 2` on one GPU): every stage across 2 ranks with
// the MPI communicator on device buffers against 1 rank, and the bf16 ZeRO
// memory formulas. Without a GPU each test prints a SKIPPED line and passes.
#include <cstdio>
#include <random>

#include "model/activation_memory.h"
#include "model/gpt.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/zero_harness.h"
#include "train/loop/init_weights.h"
#include "zero/analysis/memory_formula.h"
#include "zero/analysis/plan.h"
#include "zero/comm/nccl_factory.h"

namespace zt {
namespace {

GPTConfig gpu_shape() {  // head size 32: the smallest the CUDA attention supports
  GPTConfig c = tiny_model();
  c.n_embd = 64;
  return c;
}

struct ModelRun {
  double loss;
  std::vector<float> grads;
  uint64_t activation_bytes = 0;  // the model's allocations, from the ledger
};

ModelRun run_model(Ops& ops, const ParamTable& table, const std::vector<float>& w,
                   const std::vector<int>& in, const std::vector<int>& tgt, int B, int T,
                   Recompute recompute = Recompute::None) {
  FlatHooks hooks(table, ops);
  hooks.set_params(w);
  const uint64_t before = ops.ledger().current(MemCategory::Activations);
  GPT model(table, ops, B, T, recompute);
  const uint64_t bytes = ops.ledger().current(MemCategory::Activations) - before;
  const double sum = model.forward_backward(in.data(), tgt.data(), 1.0f / (B * T), hooks);
  return {sum / (B * T), hooks.grads_f32(), bytes};
}

// A model of `layers` blocks (width 128, head size 64) with fresh random
// weights and tokens, B x T = 4 x 64.
constexpr int kCaseB = 4, kCaseT = 64;
struct RandomCase {
  GPTConfig config;
  ParamTable table;
  std::vector<float> weights;
  std::vector<int> in, tgt;
};
RandomCase random_case(int layers) {
  GPTConfig c;
  c.n_layer = layers;
  c.n_head = 2;
  c.n_embd = 128;
  c.vocab_size = 1000;
  c.seq_len = kCaseT;
  RandomCase rc{
      c, ParamTable(c), {}, std::vector<int>(kCaseB * kCaseT), std::vector<int>(kCaseB * kCaseT)};
  std::mt19937 rng(std::random_device{}());
  rc.weights.resize(rc.table.total());
  init_gpt2_weights(rc.table, rng(), rc.weights.data());
  for (int i = 0; i < kCaseB * kCaseT; i++) {
    rc.in[i] = static_cast<int>(rng() % c.vocab_size);
    rc.tgt[i] = static_cast<int>(rng() % c.vocab_size);
  }
  return rc;
}

}  // namespace

TEST_CASE("the CUDA model's loss and gradients match the CPU model's", "[gpu]") {
  if (no_gpu()) {
    SUCCEED("no GPU");
    return;
  }
  const RandomCase rc = random_case(2);
  const ParamTable& table = rc.table;
  const std::vector<float>& w = rc.weights;
  const std::vector<int>&in = rc.in, &tgt = rc.tgt;
  const int B = kCaseB, T = kCaseT;
  auto cpu = make_cpu_ops();
  auto gpu = make_cuda_ops(0);
  const ModelRun ref = run_model(*cpu, table, w, in, tgt, B, T);
  const ModelRun got = run_model(*gpu, table, w, in, tgt, B, T);
  CHECK(std::abs(got.loss - ref.loss) <= 1e-2 * std::abs(ref.loss));
  for (const ParamInfo& p : table.params()) {
    std::vector<float> a(got.grads.begin() + p.offset, got.grads.begin() + p.offset + p.numel);
    std::vector<float> b(ref.grads.begin() + p.offset, ref.grads.begin() + p.offset + p.numel);
    const double err = rel_l2(a, b);
    INFO(p.name << ": relative L2 error " << err);
    CHECK(err < 3e-2);
  }
  const ModelRun again = run_model(*gpu, table, w, in, tgt, B, T);
  CHECK(again.loss == got.loss);
  CHECK(again.grads == got.grads);
}

TEST_CASE("recompute on the GPU: gradients within bf16 tolerance of none, buffers as the formula",
          "[gpu]") {
  if (no_gpu()) {
    SUCCEED("no GPU");
    return;
  }
  const RandomCase rc = random_case(3);
  const GPTConfig& c = rc.config;
  const ParamTable& table = rc.table;
  const std::vector<float>& w = rc.weights;
  const std::vector<int>&in = rc.in, &tgt = rc.tgt;
  const int B = kCaseB, T = kCaseT;
  auto gpu = make_cuda_ops(0);
  const ModelRun ref = run_model(*gpu, table, w, in, tgt, B, T);
  CHECK(ref.activation_bytes == activation_bytes(c, B, T, Recompute::None, DType::BF16));
  for (Recompute r : {Recompute::Attn, Recompute::Mlp, Recompute::Block}) {
    INFO("recompute " << recompute_name(r));
    const ModelRun got = run_model(*gpu, table, w, in, tgt, B, T, r);
    CHECK(got.activation_bytes == activation_bytes(c, B, T, r, DType::BF16));
    CHECK(got.activation_bytes < ref.activation_bytes);
    CHECK(std::abs(got.loss - ref.loss) <= 1e-3 * std::abs(ref.loss));
    size_t identical = 0;
    for (const ParamInfo& p : table.params()) {
      std::vector<float> a(got.grads.begin() + p.offset, got.grads.begin() + p.offset + p.numel);
      std::vector<float> b(ref.grads.begin() + p.offset, ref.grads.begin() + p.offset + p.numel);
      const double err = rel_l2(a, b);
      INFO(p.name << ": relative L2 error " << err);
      CHECK(err < 1e-2);
      identical += a == b;
    }
    std::printf("recompute %s on the GPU: %zu of %zu gradient tensors bit-identical to none\n",
                recompute_name(r), identical, table.params().size());
  }
}

TEST_CASE("NCCL at W = 1 gives exactly the single-process results", "[gpu]") {
  if (no_gpu()) {
    SUCCEED("no GPU");
    return;
  }
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W != 1) return;
  for (int stage : {0, 2, 3}) {
    ZeroConfig z;
    z.stage = stage;
    z.stage3_param_persistence_threshold = 0;
    RunResult r[2];
    for (int use_nccl = 0; use_nccl < 2; use_nccl++) {
      auto ops = make_cuda_ops(0);
      CountingCommunicator comm(use_nccl ? make_nccl_communicator(*ops)
                                         : make_single_communicator(*ops));
      r[use_nccl] = train(z, comm, *ops, gpu_shape());
    }
    INFO("stage " << stage);
    CHECK(r[0].losses == r[1].losses);
    CHECK(r[0].master == r[1].master);
  }
}

TEST_CASE("every stage on 2 ranks of one GPU (MPI communicator) matches 1 rank", "[gpu_mpi]") {
  if (no_gpu()) {
    SUCCEED("no GPU");
    return;
  }
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  const ParamTable table(gpu_shape());
  RunResult ref;
  {
    auto ops = make_cuda_ops(0);
    auto single = make_single_communicator(*ops);
    ref = train(ZeroConfig(), *single, *ops, gpu_shape());
  }
  for (int stage : {0, 1, 2, 3}) {
    for (bool native : {false, true}) {
      if (native && (stage == 0 || stage == 3)) continue;
      ZeroConfig z;
      z.stage = stage;
      z.native_reduce_scatter = native;
      z.reduce_bucket_size = 5000;
      z.stage3_param_persistence_threshold = 0;
      auto ops = make_cuda_ops(0);
      CountingCommunicator comm(W == 1 ? make_single_communicator(*ops)
                                       : make_mpi_communicator(*ops));
      const RunResult got = train(z, comm, *ops, gpu_shape());
      INFO("W = " << W << ", stage " << stage << (native ? " native reduce-scatter" : ""));
      bool ok = true;
      for (int s = 0; s < kSteps; s++)
        ok = ok && std::abs(got.losses[s] - ref.losses[s]) <= 2e-2 * ref.losses[s];
      CHECK(all_ranks(ok));
      const double perr = rel_l2(got.master, ref.master);
      INFO("parameters: relative L2 error " << perr);
      CHECK(all_ranks(perr < 5e-2));
      const StepPlan plan = plan_step(setup_for(z, table), table, W, kSeqPerStep / (kB * W),
                                      DType::BF16, NodeMap::uniform(W, W));
      CHECK(all_ranks(got.model_states ==
                      model_states_bytes(stage, got.padded, W, 2, 2) + plan.persistent_bytes));
    }
  }
}

}  // namespace zt
