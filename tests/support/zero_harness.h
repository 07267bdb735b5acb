// Shared by the ZeRO tests on the CPU and on the GPU: a tiny GPT, a synthetic
// corpus with some structure, and a training loop that indexes micro-batches
// exactly as the data loader does (micro-step m of rank r takes sequences
// (m * W + r) * B.. of the step), so any W reproduces W = 1.
#pragma once
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/device_services.h"
#include "model/gpt.h"
#include "tests/support/support_zero.h"
#include "tests/support/test_support.h"
#include "train/loop/init_weights.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/layout/param_groups.h"
#include "zero/optim/offload_store.h"
#include "zero/stages/engine.h"

namespace zt {

constexpr int kB = 1, kT = 16, kSeqPerStep = 12, kSteps = 3;

inline GPTConfig tiny_model() { return gpt_shape(2, 2, 32, 67, kT); }

// Sequence g of a synthetic corpus with some structure (so training moves).
inline void sequence(int64_t g, int* in, int* tgt, int V) {
  uint64_t s = 0x9E3779B97F4A7C15ull * (g + 1);
  int prev = static_cast<int>(g % V);
  for (int t = 0; t <= kT; t++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const int next = (s % 4 == 0) ? static_cast<int>(s % V) : (prev * 7 + 3) % V;
    if (t < kT) in[t] = prev;
    if (t > 0) tgt[t - 1] = prev;
    prev = next;
    if (t == kT) tgt[kT - 1] = next;
  }
}

struct RunResult {
  std::vector<double> losses;
  std::vector<float> master;
  CommStats comm;
  std::vector<CallRecord> calls;  // every collective of the training steps, in order
  uint64_t model_states = 0;
  uint64_t host_states = 0, nvme_states = 0;  // offload: alloc_host's and the files' bytes
  std::vector<float> state;                   // this rank's master | m | v shard at the end
  size_t padded = 0;
  uint64_t hpz_secondary_peak = 0;
  uint64_t live_params_peak = 0;  // stage 3: most non-persistent parameter bytes gathered at once
  ShardOptimizer::GradCopyBytes grad_copies;  // offload: the last step's gradients to the host
  size_t owned = 0;                           // elements of this rank's optimizer pieces
  uint64_t param_read_ahead = 0;              // offload_param nvme: bytes gathers found read ahead
};

constexpr double kClip = 1.0;

// The engine's setup the harness trains with (and plans against).
inline ZeroSetup setup_for(const ZeroConfig& z, const ParamTable& table,
                           const std::string& groups = "two",
                           Recompute recompute = Recompute::None) {
  return engine_setup(z, table, kClip, groups, recompute);
}

// Trains kSteps steps of kSeqPerStep sequences with the loader's indexing:
// micro-step m of rank r takes sequences (m * W + r) * B.. of the step.
inline RunResult train(const ZeroConfig& z, Communicator& comm, Ops& ops,
                       const GPTConfig& shape = tiny_model(), const std::string& groups = "two",
                       Recompute recompute = Recompute::None, int ranks_per_node = 2) {
  const ParamTable table(shape);
  const int W = comm.world(), r = comm.rank();
  const int A = kSeqPerStep / (kB * W);
  ZeroSetup setup = setup_for(z, table, groups, recompute);
  setup.ranks_per_node = std::min(ranks_per_node, W);  // the node map the tests pretend
  std::unique_ptr<ZeroEngine> engine = make_zero_engine(setup, table, ops, comm);
  std::vector<float> w(table.total());
  init_gpt2_weights(table, 7, w.data());
  engine->init_weights(w.data());
  GPT model(table, ops, kB, kT, recompute);
  OptimSettings os{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
  auto* counting = dynamic_cast<CountingCommunicator*>(&comm);
  if (counting) counting->keep_log();
  const CommStats at_start = counting ? counting->stats() : CommStats();
  const size_t calls_at_start = counting ? counting->log().size() : 0;
  RunResult res;
  std::vector<int> in(kB * kT), tgt(kB * kT);
  for (int step = 0; step < kSteps; step++) {
    if (counting) counting->set_step(step);
    double loss = 0;
    for (int m = 0; m < A; m++) {
      sequence(static_cast<int64_t>(step) * kSeqPerStep + (m * W + r) * kB, in.data(), tgt.data(),
               table.config().vocab_size);
      engine->begin_micro_step(m, A);
      loss += model.forward_backward(in.data(), tgt.data(), 1.0f / (kSeqPerStep * kT), *engine);
      engine->end_micro_step();
    }
    engine->step(os, step + 1);
    double global = 0;
    MPI_Allreduce(&loss, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    res.losses.push_back(comm.world() == 1 && W == 1 ? loss / (kSeqPerStep * kT)
                                                     : global / (kSeqPerStep * kT));
  }
  if (counting) {
    res.comm = counting->stats().minus(at_start);
    res.calls.assign(counting->log().begin() + calls_at_start, counting->log().end());
  }
  const MemoryLedger& L = ops.ledger();
  res.model_states = L.current(MemCategory::Params) + L.current(MemCategory::Grads) +
                     L.current(MemCategory::Optimizer);
  const MemoryLedger& H = ops.services().host_ledger();
  res.host_states = H.current(MemCategory::Params) + H.current(MemCategory::Grads) +
                    H.current(MemCategory::Optimizer);
  res.nvme_states = nvme_ledger().current_total();
  std::vector<float> m, v;
  engine->optimizer().save_state(res.state, m, v);
  res.state.insert(res.state.end(), m.begin(), m.end());
  res.state.insert(res.state.end(), v.begin(), v.end());
  res.padded = engine->padded_params();
  res.hpz_secondary_peak = engine->hpz_secondary_peak_bytes();
  res.live_params_peak = engine->live_params_peak_bytes();
  res.grad_copies = engine->optimizer().grad_copy_bytes();
  for (const OptimPiece& p : engine->optimizer().pieces()) res.owned += p.n;
  res.param_read_ahead = engine->param_read_ahead_bytes();
  res.master = engine->gather_master(ops, comm, table.total());
  return res;
}

inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); i++) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// True on every rank only if `ok` holds on every rank.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace zt
