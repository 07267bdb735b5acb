// ZeRO across ranks, run under `mpirun -np W` for W = 1..4 (tag [mpi]). Every
// rank first computes the reference itself: stage 0 on ONE rank (no
// communication) over the same global batch, per parameter grouping. Then
// every stage x gradient path x switch combination runs across the W ranks and
// must give the reference's losses and final parameters within fp32 rounding,
// issue exactly the collectives `plan` lists, call for call and in order
// (phase, micro-step, primitive, dtype, count, root), and hold exactly the
// model-state bytes of the ZeRO formula. Checks are collective: a failure on
// any rank fails the test on rank 0.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tests/support/catch.h"
#include "tests/support/zero_harness.h"
#include "train/loop/init_weights.h"
#include "zero/analysis/memory_formula.h"
#include "zero/analysis/plan.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"
#include "zero/schedule/stage012_schedule.h"
#include "zero/stages/engine.h"

namespace zt {
namespace {

int world() {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  return W;
}

const RunResult& reference(const std::string& groups) {
  static std::map<std::string, RunResult> refs;
  if (!refs.count(groups)) {
    auto ops = make_cpu_ops();
    auto single = make_single_communicator(*ops);
    refs[groups] = train(ZeroConfig(), *single, *ops, tiny_model(), groups);
  }
  return refs[groups];
}

struct Variant {
  std::string name;
  ZeroConfig z;
  std::string groups = "two";
  bool exact = true;  // false: a narrower wire dtype, so only close to the reference
  Recompute recompute = Recompute::None;
  int shard = 0;           // MiCS: the ranks the model states are sharded over (0: all W)
  int ranks_per_node = 2;  // the node map the engine and the plan are given
};

std::string describe(const PlannedCall& c) {
  std::ostringstream o;
  o << phase_name(c.phase) << c.micro << " " << primitive_name(c.primitive) << " "
    << dtype_name(c.dtype) << " " << c.count << " root " << c.root << " group " << c.group.size
    << "/" << c.group.stride << " (" << c.what << ")";
  return o.str();
}
std::string describe(const CallRecord& c) {
  std::ostringstream o;
  o << phase_name(c.phase) << c.micro << " " << primitive_name(c.primitive) << " "
    << dtype_name(c.dtype) << " " << c.count << " root " << c.root << " group " << c.group.size
    << "/" << c.group.stride;
  return o.str();
}

// "" when step `step` of the run issued exactly the planned calls, else the first difference.
std::string compare_calls(const std::vector<CallRecord>& got, int step,
                          const std::vector<PlannedCall>& want) {
  std::vector<CallRecord> mine;
  for (const CallRecord& c : got)
    if (c.step == step) mine.push_back(c);
  for (size_t i = 0; i < std::max(mine.size(), want.size()); i++) {
    if (i >= mine.size())
      return "step " + std::to_string(step) + " call " + std::to_string(i) + ": planned " +
             describe(want[i]) + ", not issued";
    if (i >= want.size())
      return "step " + std::to_string(step) + " call " + std::to_string(i) + ": issued " +
             describe(mine[i]) + ", not planned";
    const CallRecord& a = mine[i];
    const PlannedCall& b = want[i];
    const RankGroup planned_group = b.group.size > 0 ? b.group : RankGroup{a.group.size, 1};
    if (a.phase != b.phase || a.micro != b.micro || a.primitive != b.primitive ||
        a.dtype != b.dtype || a.count != b.count || a.root != b.root ||
        !(a.group == planned_group) || (b.group.size == 0 && a.group.stride != 1))
      return "step " + std::to_string(step) + " call " + std::to_string(i) + ": issued " +
             describe(a) + ", planned " + describe(b);
  }
  return "";
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  const char* paths[] = {"fallback", "allreduce", "multi_rank", "per_owner", "native_rs"};
  for (int stage : {0, 1, 2}) {
    for (int path = 0; path < (stage == 0 ? 1 : 5); path++) {
      for (int64_t bucket : {int64_t(700), int64_t(3000), int64_t(500000000)}) {
        for (bool overlap : {false, true}) {
          Variant x;
          x.z.stage = stage;
          x.z.reduce_bucket_size = bucket;
          x.z.overlap_comm = overlap;
          x.z.contiguous_gradients = path != 0;
          x.z.reduce_scatter = path != 1;
          x.z.use_multi_rank_bucket_allreduce = path != 3;
          x.z.native_reduce_scatter = path == 4;
          x.z.allgather_bucketed = bucket == 700;
          x.z.allgather_bucket_size = 900;
          // One grouping and round-robin ownership where they change the schedule.
          x.groups = bucket == 3000 && !overlap ? "one" : "two";
          x.z.round_robin_gradients = bucket == 3000 && overlap && path != 4;
          x.name = "stage " + std::to_string(stage) + " " + paths[path] + " bucket " +
                   std::to_string(bucket) + (overlap ? " overlap" : "") + " groups " + x.groups +
                   (x.z.round_robin_gradients ? " round-robin" : "");
          v.push_back(x);
        }
      }
    }
  }
  // A narrower wire dtype on the fp32 CPU model (DeepSpeed converts and back).
  for (int stage : {0, 2, 3}) {
    Variant x;
    x.z.stage = stage;
    x.z.reduce_bucket_size = 3000;
    x.z.communication_data_type = "bf16";
    x.z.stage3_param_persistence_threshold = 0;
    x.exact = false;
    x.name = "stage " + std::to_string(stage) + " communication_data_type bf16";
    v.push_back(x);
  }
  // Stage 3: true reduce-scatter or all-reduce; persistence of every tensor,
  // none, or the small ones; default, tiny and zero reuse distance; default,
  // off and small prefetch; a live-parameter cap; whole-block gathers.
  for (bool rs : {true, false})
    for (int64_t persist : {int64_t(100000), int64_t(0), int64_t(64)})
      for (int64_t reuse : {int64_t(1000000000), int64_t(10), int64_t(0)})
        for (int64_t prefetch : {int64_t(50000000), int64_t(0), int64_t(3000)}) {
          Variant x;
          x.z.stage = 3;
          x.z.reduce_scatter = rs;
          x.z.stage3_param_persistence_threshold = persist;
          x.z.stage3_max_reuse_distance = reuse;
          x.z.stage3_prefetch_bucket_size = prefetch;
          x.z.reduce_bucket_size = persist == 64 ? 3000 : 500000000;
          x.z.overlap_comm = prefetch == 3000;
          x.z.stage3_max_live_parameters = reuse == 10 && prefetch == 3000 ? 5000 : 1000000000;
          x.z.stage3_block_gathers = reuse == 0 && prefetch == 0;
          x.groups = persist == 0 && reuse == 10 ? "one" : "two";
          x.name = std::string("stage 3 ") + (rs ? "reduce_scatter" : "allreduce") + " persist " +
                   std::to_string(persist) + " reuse " + std::to_string(reuse) + " prefetch " +
                   std::to_string(prefetch) + " max live " +
                   std::to_string(x.z.stage3_max_live_parameters) +
                   (x.z.stage3_block_gathers ? " block gathers" : "") + " groups " + x.groups;
          v.push_back(x);
        }
  // Activation recompute: the recomputed forward's fetches inside the backward
  // are further uses the stage-3 trace records and prefetches for; with and
  // without prefetch, reuse, persistence and whole-block gathers.
  for (Recompute r : {Recompute::Block, Recompute::Mlp, Recompute::Attn})
    for (int64_t prefetch : {int64_t(50000000), int64_t(0), int64_t(3000)}) {
      if (r != Recompute::Block && prefetch != 3000) continue;
      Variant x;
      x.z.stage = 3;
      x.z.stage3_prefetch_bucket_size = prefetch;
      x.z.stage3_param_persistence_threshold = prefetch == 0 ? 0 : 64;
      x.z.stage3_max_reuse_distance = prefetch == 3000 ? 10 : 1000000000;
      x.z.stage3_block_gathers = prefetch == 0;
      x.z.reduce_bucket_size = 3000;
      x.recompute = r;
      x.name = std::string("stage 3 recompute ") + recompute_name(r) + " prefetch " +
               std::to_string(prefetch) + (x.z.stage3_block_gathers ? " block gathers" : "");
      v.push_back(x);
    }
  Variant x;
  x.z.stage = 2;
  x.z.reduce_bucket_size = 3000;
  x.recompute = Recompute::Block;
  x.name = "stage 2 recompute block";
  v.push_back(x);
  // ZeRO++: hpZ over pairs (or the whole world where W is odd), with prefetch
  // and persistence or without; qwZ's int8 gathers (not exact: the gathered
  // weights are quantized); qgZ's hierarchical int4 reduction on two ranks per
  // node (the harness's node map); all three together.
  const int hpz = world() % 2 == 0 ? 2 : world();
  for (int k = 0; k < 5; k++) {
    Variant y;
    y.z.stage = 3;
    y.z.reduce_bucket_size = 3000;
    y.z.zero_hpz_partition_size = k == 2 || k == 3 ? 1 : hpz;
    y.z.stage3_prefetch_bucket_size = k == 1 ? 0 : 3000;
    y.z.stage3_param_persistence_threshold = k == 1 ? 0 : 64;
    y.z.zero_quantized_weights = k >= 2 && k != 3;
    y.z.zero_quantized_gradients = k >= 3;
    y.recompute = k == 1 ? Recompute::Block : Recompute::None;
    y.exact = k < 2;
    y.name = "stage 3 ZeRO++ hpz " + std::to_string(y.z.zero_hpz_partition_size) + " qwZ " +
             (y.z.zero_quantized_weights ? "on" : "off") + " qgZ " +
             (y.z.zero_quantized_gradients ? "on" : "off") +
             (k == 1 ? " no prefetch, recompute block" : "");
    v.push_back(y);
  }
  // MiCS: shard groups of 2 (1 where W is odd), of 1 (every rank whole, W replicas) and of W
  // (plain stage 3 over the world's group), small buckets so that several buckets each take
  // their all-reduce across replicas; at W = 4 the hierarchical gather across the harness's
  // nodes of 2 ranks (a shard group of 4 spans two of them), and at even W shard groups of 2
  // on nodes of 1 rank (the inside-the-node call runs over one rank, as DeepSpeed issues it).
  const int W = world();
  for (int k = 0; k < 5; k++) {
    Variant m;
    m.z.stage = 3;
    m.shard = k == 0 || k == 4 ? (W % 2 == 0 ? 2 : 1) : k == 1 ? 1 : W;
    m.z.mics_shard_size = m.shard;
    m.z.mics_hierarchical_params_gather = k >= 3;
    if ((k == 3 && W != 4) || (k == 4 && W % 2 != 0)) continue;
    m.ranks_per_node = k == 4 ? 1 : 2;
    m.z.reduce_bucket_size = k == 1 ? 500000000 : 3000;
    m.z.stage3_prefetch_bucket_size = k == 2 ? 0 : 3000;
    m.z.stage3_param_persistence_threshold = k == 1 ? 0 : 64;
    m.groups = k == 1 ? "one" : "two";
    m.name = "stage 3 MiCS shard " + std::to_string(m.shard) +
             (k >= 3 ? " hierarchical on nodes of " + std::to_string(m.ranks_per_node) : "") +
             " bucket " + std::to_string(m.z.reduce_bucket_size);
    v.push_back(m);
  }
  return v;
}

}  // namespace

TEST_CASE("every stage and gradient path matches one rank, the plan and the formula", "[mpi]") {
  const ParamTable table(tiny_model());
  const int W = world();
  uint64_t largest_live_peak = 0;  // the agreement below must be tested on a non-zero peak
  for (const Variant& v : variants()) {
    INFO("W = " << W << ", " << v.name);
    const RunResult& ref = reference(v.groups);
    auto ops = make_cpu_ops();
    std::unique_ptr<Communicator> inner =
        W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops);
    CountingCommunicator comm(std::move(inner));
    // Pretend two ranks per node (unless the variant says), so that the node-aware split has
    // both parts.
    const NodeMap nodes = NodeMap::uniform(W, std::min(v.ranks_per_node, W));
    comm.set_nodes(nodes);
    const RunResult got =
        train(v.z, comm, *ops, tiny_model(), v.groups, v.recompute, v.ranks_per_node);

    const double tol = v.exact ? 1e-5 : 2e-2;
    bool losses_ok = true;
    for (int s = 0; s < kSteps; s++)
      losses_ok =
          losses_ok && std::abs(got.losses[s] - ref.losses[s]) <= tol * std::abs(ref.losses[s]);
    CHECK(all_ranks(losses_ok));
    const double perr = rel_l2(got.master, ref.master);
    INFO("final parameters: relative L2 error " << perr);
    CHECK(all_ranks(perr < (v.exact ? 1e-5 : 5e-2)));
    // Training must have moved the parameters, or the comparison proves nothing.
    std::vector<float> initial(table.total());
    init_gpt2_weights(table, 7, initial.data());
    CHECK(rel_l2(got.master, initial) > 1e-3);

    ZeroSetup planned = setup_for(v.z, table, v.groups, v.recompute);
    planned.ranks_per_node = nodes.ranks_per_node();  // as train() placed the engine
    const StepPlan plan = plan_step(planned, table, W, kSeqPerStep / (kB * W), DType::F32, nodes);
    std::string diff;
    for (int s = 0; s < kSteps && diff.empty(); s++)
      diff = compare_calls(got.calls, s, s == 0 ? plan.first_step_calls() : plan.steady_step);
    INFO("first difference from the plan: " << diff);
    CHECK(all_ranks(diff.empty()));
    // The engine's gathers and plan's recording backend count live parameters alike.
    INFO("live parameter peak: engine " << got.live_params_peak << " B, plan "
                                        << plan.live_params_peak_bytes << " B");
    CHECK(all_ranks(got.live_params_peak == plan.live_params_peak_bytes));
    largest_live_peak = std::max(largest_live_peak, got.live_params_peak);
    // Inter-node bus bytes, averaged over the ranks, as the plan counts them.
    bool inter_ok = true;
    for (int p = 0; p < static_cast<int>(Primitive::kCount); p++) {
      double mine = got.comm.by_primitive[p].inter_node_bus_bytes, sum = 0;
      MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const double want =
          plan.first[p].inter_node_bus_bytes + plan.per_step[p].inter_node_bus_bytes * (kSteps - 1);
      INFO(primitive_name(static_cast<Primitive>(p))
           << ": inter-node bus bytes counted " << sum / W << ", planned " << want);
      inter_ok = inter_ok && std::abs(sum / W - want) <= 1e-6 * (1 + want);
      CHECK(std::abs(sum / W - want) <= 1e-6 * (1 + want));
    }
    CHECK(all_ranks(inter_ok));
    CHECK(all_ranks(got.model_states ==
                    model_states_bytes(v.z.stage, got.padded, v.shard > 0 ? v.shard : W, 4, 4) +
                        plan.persistent_bytes));
    CHECK(
        all_ranks(got.model_states == plan.params_bytes + plan.grads_bytes + plan.optimizer_bytes));
    CHECK(all_ranks(got.hpz_secondary_peak == plan.hpz_secondary_bytes));
  }
  CHECK(all_ranks(largest_live_peak > 0));
}

TEST_CASE("DeepSpeed's switches pick the primitives DeepSpeed's paths use", "[mpi]") {
  const int W = world();
  if (W < 2) return;
  const ParamTable table(tiny_model());
  ZeroConfig z;
  z.stage = 2;
  auto grads = [&](Primitive p) {
    return plan_step(setup_for(z, table), table, W, 1, DType::F32, NodeMap::uniform(W, W))[p];
  };
  // Default: reduce_scatter true + multi-rank true -> all-reduce.
  CHECK(grads(Primitive::AllReduce).bytes > 8);
  CHECK(grads(Primitive::Reduce).calls == 0);
  CHECK(grads(Primitive::ReduceScatter).calls == 0);
  z.use_multi_rank_bucket_allreduce = false;
  CHECK(grads(Primitive::Reduce).calls > 0);
  CHECK(grads(Primitive::Reduce).bus_bytes == static_cast<double>(grads(Primitive::Reduce).bytes));
  z.native_reduce_scatter = true;
  CHECK(grads(Primitive::ReduceScatter).calls > 0);
  CHECK(grads(Primitive::Reduce).calls == 0);
}

TEST_CASE("every rooted reduce goes to the rank that owns its slice", "[mpi]") {
  const int W = world();
  if (W < 2) return;
  const ParamTable table(tiny_model());
  ZeroConfig z;
  z.stage = 2;
  z.use_multi_rank_bucket_allreduce = false;
  z.reduce_bucket_size = 700;
  const ZeroSetup s = setup_for(z, table);
  const Stage012Schedule sched = make_stage012_schedule(s, table, W, DType::F32);
  int rooted = 0;
  for (const GradBucket& b : sched.grads.buckets)
    for (const BucketCall& c : b.calls) {
      rooted++;
      for (const BucketSlice& sl : b.slices) {
        if (sl.offset < c.offset || sl.offset >= c.offset + c.count) continue;
        // The slice's owner by the layout, computed independently of the path.
        const size_t flat = sched.layout->offset(sl.param) + sl.param_offset;
        size_t gi = 0;
        while (sched.layout->partition().groups()[gi].end <= flat) gi++;
        const FlatRange grp = sched.layout->partition().groups()[gi];
        const int owner = static_cast<int>((flat - grp.begin) / (grp.size() / W));
        INFO("bucket call over [" << c.offset << ", " << c.offset + c.count << ") of "
                                  << table.params()[sl.param].name);
        CHECK(c.root == owner);
      }
    }
  CHECK(rooted > W);
}

TEST_CASE("stage 3 gathers in backward only when the reuse distance is small", "[mpi]") {
  const int W = world();
  const ParamTable table(tiny_model());
  ZeroConfig z;
  z.stage = 3;
  z.stage3_param_persistence_threshold = 0;
  z.stage3_prefetch_bucket_size = 0;
  const int A = kSeqPerStep / (kB * W);
  auto backward_gathers = [&] {
    int n = 0;
    for (const PlannedCall& c :
         plan_step(setup_for(z, table), table, W, A, DType::F32, NodeMap::uniform(W, W))
             .steady_step)
      n += c.phase == Phase::Backward && c.primitive == Primitive::AllGather;
    return n;
  };
  CHECK(backward_gathers() == 0);  // DeepSpeed's default reuse distance keeps everything
  z.stage3_max_reuse_distance = 0;
  // One rank holds whole tensors and gathers nothing (DeepSpeed's _no_gather_coalesced).
  if (W == 1) CHECK(backward_gathers() == 0);
  else CHECK(backward_gathers() > 0);
}

TEST_CASE("overlap_comm on and off give bit-identical results", "[mpi]") {
  const int W = world();
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

namespace zt {

// MiCS with one shard group of the whole world is plain stage 3: the same calls over the same
// ranks, bit-identical losses and weights.
TEST_CASE("MiCS with S = W is plain stage 3, call for call and bit for bit", "[mpi]") {
  const int W = world();
  ZeroConfig z;
  z.stage = 3;
  z.reduce_bucket_size = 3000;
  z.stage3_param_persistence_threshold = 64;
  z.stage3_prefetch_bucket_size = 3000;
  RunResult r[2];
  for (int mics = 0; mics < 2; mics++) {
    z.mics_shard_size = mics ? W : -1;
    auto ops = make_cpu_ops();
    std::unique_ptr<Communicator> inner =
        W == 1 ? make_single_communicator(*ops) : make_mpi_communicator(*ops);
    CountingCommunicator comm(std::move(inner));
    r[mics] = train(z, comm, *ops);
  }
  CHECK(all_ranks(r[0].losses == r[1].losses && r[0].master == r[1].master));
  bool same_calls = r[0].calls.size() == r[1].calls.size();
  for (size_t i = 0; same_calls && i < r[0].calls.size(); i++) {
    const CallRecord &a = r[0].calls[i], &b = r[1].calls[i];
    same_calls = a.phase == b.phase && a.micro == b.micro && a.primitive == b.primitive &&
                 a.dtype == b.dtype && a.count == b.count && a.group == b.group;
  }
  CHECK(all_ranks(same_calls));
}

// Each rank of a replica group holds the same optimizer state, and names the same group.
TEST_CASE("MiCS replicas hold identical optimizer state and name each other", "[mpi]") {
  const int W = world();
  if (W % 2 != 0) return;
  ZeroConfig z;
  z.stage = 3;
  z.mics_shard_size = 2;
  z.reduce_bucket_size = 3000;
  auto ops = make_cpu_ops();
  CountingCommunicator comm(make_mpi_communicator(*ops));
  const ParamTable table(tiny_model());
  ZeroSetup setup = setup_for(z, table);
  setup.ranks_per_node = std::min(2, W);
  std::unique_ptr<ZeroEngine> engine = make_zero_engine(setup, table, *ops, comm);
  // Ranks r, r + 2, r + 4, ...: the ranks with this rank's index in its shard group of 2.
  std::vector<int> want;
  for (int q = comm.rank() % 2; q < W; q += 2) want.push_back(q);
  CHECK(all_ranks(engine->state_replicas() == want));
  const RunResult got = train(z, comm, *ops);
  // The state (master | m | v) of rank r equals that of rank r % 2, its replica group's first.
  MPI_Comm replicas;
  MPI_Comm_split(MPI_COMM_WORLD, comm.rank() % 2, comm.rank(), &replicas);
  std::vector<float> first = got.state;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, replicas);
  MPI_Comm_free(&replicas);
  CHECK(all_ranks(!got.state.empty() && got.state == first));
}

}  // namespace zt
