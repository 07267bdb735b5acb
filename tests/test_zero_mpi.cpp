// ZeRO across ranks, run under `mpirun -np W` for W = 1..4 (tag [mpi]). Every
// rank first computes the reference itself: stage 0 on ONE rank (no
// communication) over the same global batch. Then every stage x gradient path x
// switch combination runs across the W ranks and must give the reference's
// losses and final parameters within fp32 rounding, move exactly the bytes
// `plan` predicts, and hold exactly the model-state bytes of the ZeRO formula.
// Checks are collective: a failure on any rank fails the test on rank 0.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tests/catch.h"
#include "tests/zero_harness.h"
#include "train/run_outputs.h"
#include "zero/comm_stats.h"
#include "zero/communicators.h"
#include "zero/engine.h"
#include "zero/plan.h"

namespace zt {
namespace {

RunResult reference() {
  static RunResult ref;
  static bool done = false;
  if (!done) {
    auto ops = make_cpu_ops();
    auto single = make_single_communicator(*ops);
    ref = train(ZeroConfig(), *single, *ops);
    done = true;
  }
  return ref;
}

struct Variant {
  std::string name;
  ZeroConfig z;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (int stage : {0, 1, 2}) {
    for (int path = 0; path < (stage == 0 ? 1 : 5); path++) {
      for (int64_t bucket : {int64_t(700), int64_t(500000000)}) {
        for (bool overlap : {false, true}) {
          ZeroConfig z;
          z.stage = stage;
          z.reduce_bucket_size = bucket;
          z.overlap_comm = overlap;
          z.contiguous_gradients = path != 0;
          z.reduce_scatter = path != 1;
          z.use_multi_rank_bucket_allreduce = path != 3;
          z.native_reduce_scatter = path == 4;
          z.allgather_bucketed = bucket < 1000;
          z.allgather_bucket_size = 900;
          const char* paths[] = {"fallback", "allreduce", "multi_rank", "per_owner", "native_rs"};
          v.push_back({"stage " + std::to_string(stage) + " " + paths[path] + " bucket " +
                           std::to_string(bucket) + (overlap ? " overlap" : ""),
                       z});
        }
      }
    }
  }
  // Stage 3: true reduce-scatter or all-reduce; DeepSpeed's persistence threshold
  // (every tensor of this model stays whole) or none; default or tiny reuse
  // distance (backward gathers again); with and without prefetch/overlap.
  for (bool rs : {true, false})
    for (int64_t persist : {int64_t(100000), int64_t(0), int64_t(64)})
      for (int64_t reuse : {int64_t(1000000000), int64_t(10)})
        for (bool overlap : {false, true}) {
          ZeroConfig z;
          z.stage = 3;
          z.reduce_scatter = rs;
          z.stage3_param_persistence_threshold = persist;
          z.stage3_max_reuse_distance = reuse;
          z.stage3_prefetch_bucket_size = 5000;
          z.reduce_bucket_size = persist == 64 ? 3000 : 500000000;
          z.overlap_comm = overlap;
          v.push_back({std::string("stage 3 ") + (rs ? "reduce_scatter" : "allreduce") +
                           " persist " + std::to_string(persist) + " reuse " +
                           std::to_string(reuse) + (overlap ? " overlap" : ""),
                       z});
        }
  return v;
}

}  // namespace

TEST_CASE("every stage and gradient path matches one rank, the plan and the formula", "[mpi]") {
  const RunResult ref = reference();
  const ParamTable table(tiny_model());
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  for (const Variant& v : variants()) {
    INFO("W = " << W << ", " << v.name);
    auto ops = make_cpu_ops();
    std::unique_ptr<Communicator> inner =
        W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops);
    CountingCommunicator comm(std::move(inner));
    const RunResult got = train(v.z, comm, *ops);

    bool losses_ok = true;
    for (int s = 0; s < kSteps; s++)
      losses_ok =
          losses_ok && std::abs(got.losses[s] - ref.losses[s]) <= 1e-5 * std::abs(ref.losses[s]);
    CHECK(all_ranks(losses_ok));
    const double perr = rel_l2(got.master, ref.master);
    INFO("final parameters: relative L2 error " << perr);
    CHECK(all_ranks(perr < 1e-5));
    // Training must have moved the parameters, or the comparison proves nothing.
    std::vector<float> initial(table.total());
    init_gpt2_weights(table, 7, initial.data());
    CHECK(rel_l2(got.master, initial) > 1e-3);

    const StepPlan plan = plan_step(v.z, table, W, kSeqPerStep / (kB * W), DType::F32,
                                    GPT::training_unit_order(table.config().n_layer));
    bool comm_ok = true;
    for (int p = 0; p < static_cast<int>(Primitive::kCount); p++) {
      const PrimitiveStats& s = got.comm.by_primitive[p];
      const PlannedPrimitive& e = plan.per_step[p];
      INFO(primitive_name(static_cast<Primitive>(p))
           << ": measured " << s.calls << " calls, " << s.bytes << " B; plan per step " << e.calls
           << " calls, " << e.bytes << " B");
      const PlannedPrimitive& f = plan.first_step[p];
      const bool ok = s.calls == f.calls + e.calls * (kSteps - 1) &&
                      s.bytes == f.bytes + e.bytes * (kSteps - 1) &&
                      std::abs(s.bus_bytes - f.bus_bytes - e.bus_bytes * (kSteps - 1)) <=
                          1e-6 * (1 + s.bus_bytes);
      CHECK(ok);
      comm_ok = comm_ok && ok;
    }
    CHECK(all_ranks(comm_ok));
    CHECK(all_ranks(got.model_states ==
                    model_states_bytes(v.z.stage, got.padded, W, 4, 4) + plan.persistent_bytes));
    CHECK(
        all_ranks(got.model_states == plan.params_bytes + plan.grads_bytes + plan.optimizer_bytes));
  }
}

TEST_CASE("DeepSpeed's switches pick the primitives DeepSpeed's paths use", "[mpi]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W < 2) return;
  const ParamTable table(tiny_model());
  ZeroConfig z;
  z.stage = 2;
  auto grad_bytes = [&](Primitive p) { return plan_step(z, table, W, 1, DType::F32, {})[p]; };
  // Default: reduce_scatter true + multi-rank true -> all-reduce.
  CHECK(grad_bytes(Primitive::AllReduce).bytes > 4);
  CHECK(grad_bytes(Primitive::Reduce).calls == 0);
  CHECK(grad_bytes(Primitive::ReduceScatter).calls == 0);
  z.use_multi_rank_bucket_allreduce = false;
  CHECK(grad_bytes(Primitive::Reduce).calls > 0);
  CHECK(grad_bytes(Primitive::Reduce).bus_bytes ==
        static_cast<double>(grad_bytes(Primitive::Reduce).bytes));
  z.native_reduce_scatter = true;
  CHECK(grad_bytes(Primitive::ReduceScatter).calls > 0);
  CHECK(grad_bytes(Primitive::Reduce).calls == 0);
}

}  // namespace zt

namespace zt {

TEST_CASE("stage 3 gathers again in backward only when the reuse distance is small", "[mpi]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  const ParamTable table(tiny_model());
  const std::vector<int> trace = GPT::training_unit_order(table.config().n_layer);
  const int units = table.num_units();  // embeddings, 2 blocks, final layernorm
  ZeroConfig z;
  z.stage = 3;
  z.stage3_param_persistence_threshold = 0;
  const int A = kSeqPerStep / (kB * W);
  // DeepSpeed's default reuse distance: every unit is gathered once, in forward.
  CHECK(plan_step(z, table, W, A, DType::F32, trace)[Primitive::AllGather].calls ==
        static_cast<uint64_t>(units * A));
  // A tiny reuse distance: every use gathers, the head and the backward too.
  z.stage3_max_reuse_distance = 10;
  CHECK(plan_step(z, table, W, A, DType::F32, trace)[Primitive::AllGather].calls ==
        static_cast<uint64_t>(trace.size() * A));
  // The first step traces: every use gathers, whatever the rules.
  z.stage3_max_reuse_distance = 1000000000;
  CHECK(plan_step(z, table, W, A, DType::F32, trace)
            .first_step[static_cast<int>(Primitive::AllGather)]
            .calls == trace.size() + static_cast<uint64_t>(units * (A - 1)));
}

TEST_CASE("overlap_comm on and off give bit-identical results", "[mpi]") {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  for (int stage : {1, 2, 3}) {
    ZeroConfig z;
    z.stage = stage;
    z.reduce_bucket_size = 900;
    z.stage3_param_persistence_threshold = 0;
    z.stage3_prefetch_bucket_size = 3000;
    RunResult r[2];
    for (int overlap = 0; overlap < 2; overlap++) {
      z.overlap_comm = overlap == 1;
      auto ops = make_cpu_ops();
      std::unique_ptr<Communicator> inner =
          W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops);
      CountingCommunicator comm(std::move(inner));
      r[overlap] = train(z, comm, *ops);
    }
    INFO("stage " << stage);
    CHECK(all_ranks(r[0].losses == r[1].losses && r[0].master == r[1].master));
  }
}

}  // namespace zt
