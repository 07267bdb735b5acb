// `zerotrain plan CONFIG --world W`: per rank, the model-state bytes and the
// per-step collectives of every stage and gradient path side by side, as exact
// integers, without training. The configured one is marked with '*'.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "model/activation_memory.h"
#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/commands/offload_report.h"
#include "train/commands/plan_predictions.h"
#include "train/commands/planned_config.h"
#include "train/commands/recovery_report.h"
#include "train/commands/zeropp_report.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/config/zero_setup.h"
#include "train/deepspeed/deepspeed_import.h"
#include "train/io/snapshot_format.h"
#include "zero/analysis/plan.h"
#include "zero/analysis/step_time_model.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

struct Variant {
  std::string label;
  ZeroConfig z;
  bool deepspeed_default;  // the stage's default path with DeepSpeed's switches, no ZeRO++
};

bool uses_zeropp(const ZeroConfig& z) {
  return z.stage == 3 &&
         (z.zero_hpz_partition_size > 1 || z.zero_quantized_weights || z.zero_quantized_gradients);
}

// Every listed gradient path of every stage (grad_path_registry.h), then
// stage 3 with ZeRO++'s features one by one and together, where they change
// anything (several nodes) or where the config asks for them, and stage 3 with
// the config's MiCS groups where it sets them.
std::vector<Variant> variants(const ZeroConfig& base, int nodes, int ranks_per_node) {
  std::vector<Variant> v;
  for (int stage = 0; stage <= 3; stage++)
    for (const GradPathRow* row : listed_grad_paths(stage)) {
      ZeroConfig z = base;
      z.stage = stage;
      resolve_overlap_default(z);
      z = with_grad_path(z, *row);
      z.mics_shard_size = -1;
      z.mics_hierarchical_params_gather = false;
      if (stage == 3) {
        z.zero_hpz_partition_size = 1;
        z.zero_quantized_weights = z.zero_quantized_gradients = false;
      }
      v.push_back({stage == 0 ? "stage 0" : "stage " + std::to_string(stage) + " " + row->key, z,
                   row->deepspeed_default});
    }
  if (nodes > 1 || uses_zeropp(base)) {
    const int hpz =
        base.zero_hpz_partition_size > 1 ? base.zero_hpz_partition_size : ranks_per_node;
    // One rank per node: an hpZ group of one is plain stage 3.
    const std::string hpz_part = hpz > 1 ? "hpZ " + std::to_string(hpz) + "+" : "";
    const Variant plain3 = *std::find_if(
        v.begin(), v.end(), [](const Variant& x) { return x.z.stage == 3 && x.deepspeed_default; });
    for (int k = hpz > 1 ? 0 : 1; k < 4; k++) {
      Variant x = plain3;
      x.label = k == 0   ? "stage 3 hpZ " + std::to_string(hpz)
                : k == 1 ? "stage 3 qwZ"
                : k == 2 ? "stage 3 qgZ"
                         : "stage 3 " + hpz_part + "qwZ+qgZ";
      x.z.zero_hpz_partition_size = k == 0 || k == 3 ? hpz : 1;
      x.z.zero_quantized_weights = k == 1 || k == 3;
      x.z.zero_quantized_gradients = k == 2 || k == 3;
      x.deepspeed_default = false;
      v.push_back(x);
    }
  }
  if (base.stage == 3 && base.mics_shard_size > 0) {
    Variant x = *std::find_if(
        v.begin(), v.end(), [](const Variant& y) { return y.z.stage == 3 && y.deepspeed_default; });
    x.label = "stage 3 MiCS " + std::to_string(base.mics_shard_size) +
              (base.mics_hierarchical_params_gather ? " hierarchical" : "");
    x.z.mics_shard_size = base.mics_shard_size;
    x.z.mics_hierarchical_params_gather = base.mics_hierarchical_params_gather;
    x.deepspeed_default = false;
    v.push_back(x);
  }
  return v;
}

// The switches that tell the rows apart (the configured one gets the '*').
bool same_variant(const StepPlan& a, const ZeroConfig& za, const StepPlan& b,
                  const ZeroConfig& zb) {
  auto hpz = [](const ZeroConfig& z) {
    return z.stage == 3 ? std::max(1, z.zero_hpz_partition_size) : 1;
  };
  auto qw = [](const ZeroConfig& z) { return z.stage == 3 && z.zero_quantized_weights; };
  auto qg = [](const ZeroConfig& z) { return z.stage == 3 && z.zero_quantized_gradients; };
  auto mics = [](const ZeroConfig& z) {
    return z.stage == 3 ? std::max(0, z.mics_shard_size) * 2 + z.mics_hierarchical_params_gather
                        : 0;
  };
  return a.stage == b.stage && a.path->key == b.path->key && hpz(za) == hpz(zb) &&
         qw(za) == qw(zb) && qg(za) == qg(zb) && mics(za) == mics(zb);
}

// group: the ranks a call runs over, "SIZE/STRIDE" (comm_stats.h's RankGroup), or
// `whole` when it runs over all the ranks the step was planned for ("world";
// with tensor parallelism "data" or "tensor", the rank's group).
void print_calls(const char* title, const std::vector<PlannedCall>& calls,
                 const char* whole = "world") {
  std::printf("\n%s:\n  %-6s %-5s %-14s %-5s %12s %5s %-7s  %s\n", title, "phase", "micro",
              "primitive", "dtype", "count", "root", "group", "what");
  for (const PlannedCall& c : calls) {
    const std::string group =
        c.group.size > 0 ? std::to_string(c.group.size) + "/" + std::to_string(c.group.stride)
                         : whole;
    std::printf("  %-6s %-5d %-14s %-5s %12zu %5d %-7s  %s\n", phase_name(c.phase), c.micro,
                primitive_name(c.primitive), dtype_name(c.dtype), c.count, c.root, group.c_str(),
                c.what.c_str());
  }
}

// Barriers as calls of no element, dtype "-", so that the lines read alike.
void print_startup_calls(const std::vector<StartupCall>& calls) {
  std::printf(
      "\nstart-up, before the first step (deepspeed.initialize):\n  %-6s %-5s %-14s %-5s %12s "
      "%5s %-7s  %s\n",
      "phase", "micro", "primitive", "dtype", "count", "root", "group", "what");
  for (const StartupCall& c : calls) {
    const bool barrier = c.kind == StartupCall::Barrier;
    const char* primitive = barrier ? "barrier"
                            : c.kind == StartupCall::Broadcast
                                ? primitive_name(Primitive::Broadcast)
                                : primitive_name(Primitive::AllGather);
    const std::string group =
        c.group.size > 0 ? std::to_string(c.group.size) + "/" + std::to_string(c.group.stride)
                         : "world";
    std::printf("  %-6s %-5d %-14s %-5s %12zu %5d %-7s  %s\n", phase_name(Phase::Init), 0,
                primitive, barrier ? "-" : dtype_name(c.dtype), c.count,
                c.kind == StartupCall::Broadcast ? 0 : -1, group.c_str(), c.what.c_str());
  }
}

// What plan prints, built before anything is printed: the inputs, the
// configured step's plan, and every variant planned (and timed, with a network).
struct Planned : PlannedConfig {
  std::string path;
  bool predict = false, calls = false, recovery = false;
  double relaunch_s = -1;  // --relaunch-s; < 0: not given
  NetworkModel net;
  bool has_tensor_curves = false, has_data_curves = false;
  NetworkModel tensor_curves;  // --tensor-curves: the tensor groups' calls, measured
  NetworkModel data_curves;    // --data-curves: the data-parallel groups' calls, measured
  ComputeTimes compute;
  std::vector<PredictedRow> variants;  // in plan's row order; t and why_not with a network
  std::string configured_label;
};

Planned load_planned(const std::vector<std::string>& args) {
  const CliArgs f = command_args("plan", args);
  const WorldLayout layout = world_layout(f);
  Planned p;
  p.predict = f.has("--network");
  p.calls = f.has("--calls");
  p.recovery = f.has("--recovery");
  if (f.has("--relaunch-s")) {
    if (!p.recovery) f.fail("--relaunch-s needs --recovery");
    p.relaunch_s = f.get_double("--relaunch-s", 0, between(0, 86400, true));
  }
  if (!p.predict && (f.has("--compute-from") || f.has("--compute-ms")))
    f.fail("--compute-from and --compute-ms need --network FILE.json");
  if (p.predict && f.has("--compute-from") == f.has("--compute-ms"))
    f.fail("--network needs one of --compute-from SUMMARY.json or --compute-ms MICRO,OPT");
  if (p.predict) {
    p.net = read_network_file(f.get("--network"));
    p.compute = f.has("--compute-from") ? read_compute_times(f.get("--compute-from"))
                                        : parse_compute_ms(f.get("--compute-ms"), "--compute-ms");
  }
  p.path = f.positional()[0];
  // --deepspeed plans what DeepSpeed itself runs with that file: its switches, batch sizes and
  // clipping as `train --deepspeed` imports them, and its training dtype (as explain does).
  plan_config(p, p.path, f.all("--set"), f.get("--deepspeed"), layout);
  const bool grid = p.grid.tensor > 1 || p.grid.pipeline > 1;
  if (grid && p.recovery)
    f.fail(std::string("--recovery with parallel.") + (p.grid.tensor > 1 ? "tensor" : "pipeline") +
           " > 1: the recovery model covers data parallelism only (memory recovery copies "
           "data-parallel replicas)");
  if (f.has("--tensor-curves")) {
    const std::string path = f.get("--tensor-curves");
    if (!p.predict || p.grid.tensor < 2)
      f.fail("--tensor-curves " + path + " needs --network and parallel.tensor > 1");
    p.tensor_curves = read_network_file(path);
    p.has_tensor_curves = true;
    const NetworkModel& t = p.tensor_curves;
    if (t.measured_group_size == 0)
      f.fail("--tensor-curves " + path +
             ": not commbench's JSON (expected curves measured with --group-size)");
    const std::string mismatch = group_curves_mismatch(t, p.world, p.per_node, p.grid.tensor, 1);
    if (!mismatch.empty()) f.fail("--tensor-curves " + path + ": " + mismatch);
  }
  if (f.has("--data-curves")) {
    const std::string path = f.get("--data-curves");
    if (!p.predict || !grid || p.grid.data < 2)
      f.fail("--data-curves " + path +
             " needs --network, parallel.tensor or parallel.pipeline > 1, and 2 or more "
             "data-parallel ranks");
    p.data_curves = read_network_file(path);
    p.has_data_curves = true;
    if (p.data_curves.measured_group_size == 0)
      f.fail("--data-curves " + path +
             ": not commbench's JSON (expected curves measured with --group-size)");
    const std::string mismatch =
        group_curves_mismatch(p.data_curves, p.world, p.per_node, p.grid.data, p.grid.tensor);
    if (!mismatch.empty()) f.fail("--data-curves " + path + ": " + mismatch);
  }
  if (p.predict) {
    const std::string mismatch = network_layout_mismatch(p.net, p.world, p.per_node);
    if (!mismatch.empty()) f.fail("--network " + f.get("--network") + ": " + mismatch);
    const std::string planned = compute_shape(p.cfg.model, p.cfg.train.micro_batch);
    if (!p.compute.measured_for.empty() && p.compute.measured_for != planned)
      f.fail("--compute-from " + f.get("--compute-from") + ": measured for " +
             p.compute.measured_for + ", the plan is for " + planned +
             "; compute times do not transfer between shapes (measure this one, or give "
             "--compute-ms)");
  }
  for (const Variant& v :
       variants(p.cfg.zero, p.data_nodes.nodes(), p.data_nodes.ranks_per_node())) {
    ZeroSetup setup = p.s;
    setup.z = v.z;
    PredictedRow row{v.label,
                     v.deepspeed_default,
                     plan_step(setup, *p.table, p.grid.data, p.A, p.model, p.data_nodes),
                     {},
                     ""};
    if (same_variant(row.plan, v.z, p.mine, p.cfg.zero)) p.configured_label = v.label;
    if (p.predict && !grid) {
      try {
        row.t = predict_step(row.plan, p.world, p.A, p.nodes, p.net, p.compute);
      } catch (const std::runtime_error& e) {
        row.why_not = e.what();
      }
    }
    p.variants.push_back(std::move(row));
  }
  return p;
}

void print_plan_header(const Planned& p) {
  const Config& cfg = p.cfg;
  std::printf(
      "plan: %s, %zu parameters, W = %d, %d micro-steps per step, %s gradients and "
      "parameters, reduce_bucket_size %lld, allgather %s\n",
      p.path.c_str(), p.table->total(), p.world, p.A, dtype_name(p.model),
      static_cast<long long>(cfg.zero.reduce_bucket_size),
      cfg.zero.allgather_bucketed ? "bucketed" : "one call per partition group");
  if (p.grid.tensor > 1 || p.grid.pipeline > 1)
    std::printf(
        "grid: %d data-parallel x %d tensor-parallel x %d pipeline ranks (%s): the parameters "
        "above are rank 0's part (tensor shard 0 of stage 0), and ZeRO's rows below run over its "
        "data-parallel group of %d\n",
        p.grid.data, p.grid.tensor, p.grid.pipeline, cfg.parallel.rank_order.c_str(), p.grid.data);
  for (const std::string& w : p.warnings) std::printf("deepspeed: %s\n", w.c_str());
  if (p.grid.pipeline > 1)
    std::printf("activations: per stage, with its slots, in the pipeline table below\n");
  else
    std::printf(
        "activations: %llu bytes per micro-batch of %d x %d per rank (train.recompute: %s)\n",
        static_cast<unsigned long long>(activation_bytes(
            cfg.model, cfg.train.micro_batch, cfg.model.seq_len, recompute_level(cfg), p.model,
            p.grid.tensor, cfg.parallel.sequence_parallel)),
        cfg.train.micro_batch, cfg.model.seq_len, cfg.train.recompute.c_str());
  std::printf(
      "bytes are per rank per optimizer step; payload as nccl-tests counts it, bus = "
      "payload x bus factor; inter-node = the bus bytes a ring in rank order sends to another "
      "node (%d node%s of %d ranks), averaged over the ranks\n\n",
      p.nodes.nodes(), p.nodes.nodes() == 1 ? "" : "s", p.per_node);
}

// The in-memory snapshot store of the configured step (docs/recovery.md): a
// rank's region holds two slots of its optimizer state (the memory formula's
// 12 bytes per owned element, padding included, so a bound) with at most one
// piece per tensor, and a header page; a node's store is its ranks' regions.
void print_snapshot_store(const Planned& p) {
  const int every = snapshot_interval(p.cfg.train);
  if (every <= 0) {
    std::printf("snapshot store: none (train.recovery: none, train.snapshot_every: 0)\n\n");
    return;
  }
  if (p.cfg.zero.offload_optimizer.enabled() || p.cfg.system.device == "cuda") {
    std::printf(
        "snapshot store: refused at run time: snapshots copy the optimizer state from host "
        "memory (system.device: cpu without zero.offload_optimizer)\n\n");
    return;
  }
  const uint64_t region = snapshot_region_bytes(
      snapshot_slot_bytes(p.table->params().size(), p.mine.optimizer_bytes / 12));
  std::printf(
      "snapshot store (every %d step%s, /dev/shm): at most %llu bytes per rank (4096 + 2 x (48 + "
      "16 x %zu tensors + %llu optimizer-state bytes)), %llu per node of %d ranks; the run "
      "prints the exact size\n\n",
      every, every == 1 ? "" : "s", static_cast<unsigned long long>(region),
      p.table->params().size(), static_cast<unsigned long long>(p.mine.optimizer_bytes),
      static_cast<unsigned long long>(region * p.per_node), p.per_node);
}

// The tensor dimension's totals per step (the data dimension is the table above).
void print_tensor_calls(const Planned& p) {
  const PrimitiveTotals t = totals(p.tensor_step, p.grid.tensor, p.tensor_nodes);
  std::printf(
      "\ntensor parallelism over %d ranks per group (%s), per rank per step: activations and "
      "their gradients (Megatron-LM's conjugate sums, the vocabulary-parallel embedding and "
      "loss) and the gradient norm's sum of squares; --calls lists them\n  %-14s %6s %16s %18s "
      "%16s\n",
      p.grid.tensor, p.cfg.parallel.rank_order.c_str(), "primitive", "calls", "payload B", "bus B",
      "inter-node B");
  for (int i = 0; i < static_cast<int>(Primitive::kCount); i++)
    if (t[i].calls > 0)
      std::printf("  %-14s %6llu %16llu %18.0f %16.0f\n", primitive_name(static_cast<Primitive>(i)),
                  static_cast<unsigned long long>(t[i].calls),
                  static_cast<unsigned long long>(t[i].bytes), t[i].bus_bytes,
                  t[i].inter_node_bus_bytes);
}

// The pipeline's messages per step, stage by stage, from the same schedule
// the run executes; a message crosses nodes when the peer stage's rank with
// the same data and tensor index is on another node (rank 0's coordinate here).
void print_pipeline_calls(const Planned& p) {
  const int P = p.grid.pipeline, stride = p.grid.data * p.grid.tensor;
  const Config& cfg = p.cfg;
  std::printf(
      "\npipeline over %d stages (%s, %d micro-batches; bubble (P-1)/(m+P-1) = %.4f by "
      "formula), per rank per step: the residual stream's activation and gradient, %d x %d x %d "
      "elements each, and the tied wte's gradient between the first and the last stage (the "
      "step's gradient norm adds one float all-reduce over the pipeline); --calls lists them\n  "
      "%-5s %-8s %5s %16s %6s %6s %14s %14s %14s\n",
      P, cfg.parallel.pipeline_schedule.c_str(), p.A, static_cast<double>(P - 1) / (p.A + P - 1),
      cfg.train.micro_batch, cfg.model.seq_len, cfg.model.n_embd, "stage", "blocks", "slots",
      "activations B", "sends", "recvs", "sent B", "received B", "inter-node B");
  for (int s = 0; s < P; s++) {
    const ParamTable& t = *p.stage_tables[static_cast<size_t>(s)];
    uint64_t sends = 0, recvs = 0, sent = 0, received = 0, across = 0;
    for (const PlannedCall& c : p.pipeline_step[static_cast<size_t>(s)]) {
      const uint64_t bytes = c.count * dtype_size(c.dtype);
      if (c.primitive == Primitive::Send) {
        sends++;
        sent += bytes;
        if (p.nodes.node_of[static_cast<size_t>(s * stride)] !=
            p.nodes.node_of[static_cast<size_t>(c.root * stride)])
          across += bytes;
      } else if (c.primitive == Primitive::Recv) {
        recvs++;
        received += bytes;
      }
    }
    const std::string blocks =
        std::to_string(t.first_block()) + ".." + std::to_string(t.first_block() + t.blocks() - 1);
    std::printf("  %-5d %-8s %5d %16llu %6llu %6llu %14llu %14llu %14llu\n", s, blocks.c_str(),
                p.stage_slots[static_cast<size_t>(s)],
                static_cast<unsigned long long>(stage_activation_bytes(
                    cfg.model, cfg.train.micro_batch, cfg.model.seq_len, recompute_level(cfg),
                    p.model, p.grid.tensor, t.blocks(), t.has_embeddings(), t.has_head(),
                    p.stage_slots[static_cast<size_t>(s)], cfg.parallel.sequence_parallel)),
                static_cast<unsigned long long>(sends), static_cast<unsigned long long>(recvs),
                static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(across));
  }
}

// One block of rows per variant: its bytes, then a line per primitive.
void print_variant_table(const Planned& planned) {
  std::printf("  %-30s %14s %14s %14s %14s | %-14s %6s %16s %18s %16s\n", "configuration",
              "params B", "grads B", "optimizer B", "model states B", "primitive", "calls",
              "payload B", "bus B", "inter-node B");
  for (const PredictedRow& v : planned.variants) {
    const StepPlan& p = v.plan;
    const char* mark = v.label == planned.configured_label ? "*" : " ";
    bool first = true;
    for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
      const PlannedPrimitive& c = p.per_step[i];
      if (c.calls == 0) continue;
      if (first)
        std::printf(
            "%s %-30s %14llu %14llu %14llu %14llu | ", mark, v.label.c_str(),
            static_cast<unsigned long long>(p.params_bytes),
            static_cast<unsigned long long>(p.grads_bytes),
            static_cast<unsigned long long>(p.optimizer_bytes),
            static_cast<unsigned long long>(p.params_bytes + p.grads_bytes + p.optimizer_bytes));
      else std::printf("  %-30s %14s %14s %14s %14s | ", "", "", "", "", "");
      std::printf("%-14s %6llu %16llu %18.0f %16.0f\n", primitive_name(static_cast<Primitive>(i)),
                  static_cast<unsigned long long>(c.calls),
                  static_cast<unsigned long long>(c.bytes), c.bus_bytes, c.inter_node_bus_bytes);
      first = false;
    }
    // Stage 3 traces the unit order in its first micro-step, gathering at every use.
    for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
      const PlannedPrimitive& f = p.first[i];
      if (f.calls == p.per_step[i].calls) continue;
      std::printf("  %-30s %14s %14s %14s %14s | %-14s %6llu %16llu %18.0f %16.0f  (first step)\n",
                  "", "", "", "", "", primitive_name(static_cast<Primitive>(i)),
                  static_cast<unsigned long long>(f.calls),
                  static_cast<unsigned long long>(f.bytes), f.bus_bytes, f.inter_node_bus_bytes);
    }
  }
  std::printf(
      "\nstage 3 rows: stage3_param_persistence_threshold %lld keeps tensors of at most that "
      "many elements whole on every rank\n",
      static_cast<long long>(planned.cfg.zero.stage3_param_persistence_threshold));
}

}  // namespace

int run_plan_command(const std::vector<std::string>& args) {
  const Planned p = load_planned(args);
  print_plan_header(p);
  print_snapshot_store(p);
  print_variant_table(p);
  print_zeropp(p.mine, p.unquantized, p.cfg.zero, p.grid.data, p.data_nodes);
  if (p.grid.tensor > 1) print_tensor_calls(p);
  if (p.grid.pipeline > 1) print_pipeline_calls(p);
  if (p.cfg.zero.offload_optimizer.enabled() || p.cfg.zero.offload_param.enabled())
    print_offload_memory(p.mine, p.cfg.zero, p.per_node);
  if (p.predict && (p.grid.tensor > 1 || p.grid.pipeline > 1))
    print_grid_predictions(p.cfg, p.grid, p.world, p.per_node, p.A, p.net, p.compute,
                           p.has_tensor_curves ? &p.tensor_curves : nullptr,
                           p.has_data_curves ? &p.data_curves : nullptr);
  else if (p.predict) print_predictions(p.variants, p.net, p.compute, p.A, p.configured_label);
  if (p.recovery) {
    RecoveryReportInputs r;
    r.cfg = &p.cfg;
    r.plan = &p.mine;
    r.world = p.world;
    r.ranks_per_node = p.per_node;
    r.micro_steps = p.A;
    if (p.predict) {
      r.net = &p.net;
      r.step = predict_step(p.mine, p.world, p.A, p.nodes, p.net, p.compute);
      r.compute_micro_step_s = p.compute.micro_step_s;
    }
    r.relaunch_s = p.relaunch_s;
    print_recovery_report(r);
  }
  if (p.calls) {
    for (size_t s = 0; s < p.pipeline_step.size(); s++)
      print_calls(("stage " + std::to_string(s) +
                   "'s pipeline messages of a step, in order (root: "
                   "the peer stage)")
                      .c_str(),
                  p.pipeline_step[s]);
    if (p.grid.tensor > 1)
      print_calls(
          "the tensor group's calls of a step, in order (each micro-step alike, then the "
          "step's gradient norm)",
          p.tensor_step, "tensor");
    print_calls(p.grid.tensor * p.grid.pipeline > 1
                    ? "every ZeRO collective of a steady step over the "
                      "data-parallel group, in order (the configured variant)"
                    : "every collective of a steady step, in order (the "
                      "configured variant)",
                p.mine.steady_step, p.grid.tensor * p.grid.pipeline > 1 ? "data" : "world");
    print_startup_calls(p.mine.startup);
    print_calls(p.mine.stage == 3 ? "the first step (stage 3 records its trace)"
                                  : "the first step (the same as a steady one)",
                p.mine.first_step_calls(), p.grid.tensor * p.grid.pipeline > 1 ? "data" : "world");
  }
  return 0;
}

}  // namespace zt
