// `zerotrain explain DS_CONFIG.json --world W`: what DeepSpeed does with a
// ds_config on a model, in a DeepSpeed user's terms, without training: the
// code path each bucket of gradients takes and the switch that chose it, the
// buckets, the calls and bytes per primitive (intra- and inter-node), the ZeRO
// paper's volume beside them, and the smallest change of switches that reaches
// it. The ds_config goes through the importer `train --deepspeed` uses, and
// every number comes from the schedules and plan_step objects a run executes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/commands/offload_report.h"
#include "train/commands/planned_config.h"
#include "train/commands/release_report.h"
#include "train/commands/zeropp_report.h"
#include "train/config/config.h"
#include "train/config/zero_setup.h"
#include "train/deepspeed/deepspeed_import.h"
#include "zero/analysis/paper_volume.h"
#include "zero/analysis/plan.h"
#include "zero/layout/mics_groups.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

// The buckets of one pass listed one per line up to this many; more are summarised.
constexpr size_t kBucketLines = 16;

// --model: the presets in configs/ (HF's GPT-2 names, and the file names).
std::string preset_file(const CliArgs& f, const std::string& name) {
  static const std::map<std::string, std::string> kPresets = {
      {"tiny", "tiny"},           {"gpt2", "gpt2-124m"},
      {"gpt2-124m", "gpt2-124m"}, {"gpt2-medium", "gpt2-350m"},
      {"gpt2-350m", "gpt2-350m"}, {"gpt2-large", "gpt2-774m"},
      {"gpt2-774m", "gpt2-774m"}, {"gpt2-xl", "gpt2-1.5b"},
      {"gpt2-1.5b", "gpt2-1.5b"}};
  const auto it = kPresets.find(name);
  if (it == kPresets.end())
    f.fail(
        "--model: expected one of tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl (or "
        "gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1.5b), got '" +
        name + "'");
  const std::string file = it->second + ".yaml";
  // configs/ of the working directory, else the one beside the binary's build folder.
  if (access(("configs/" + file).c_str(), R_OK) == 0) return "configs/" + file;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    for (int up = 0; up < 2 && dir.find('/') != std::string::npos; up++)
      dir = dir.substr(0, dir.rfind('/'));
    if (access((dir + "/configs/" + file).c_str(), R_OK) == 0) return dir + "/configs/" + file;
  }
  f.fail("--model " + name + ": configs/" + file +
         " not found in the working directory nor beside the binary; pass --config");
}

const char* yes_no(bool b) { return b ? "true" : "false"; }

std::string tensor_span(const ParamTable& table, const GradBucket& b) {
  const std::vector<int>& params = b.params;
  if (params.empty())
    return b.size > 0 ? "(padding only)" : "(empty: closed before a larger tensor)";
  const std::string first = table.params()[params.front()].name;
  if (params.size() == 1) return first;
  return first + " .. " + table.params()[params.back()].name;
}

// "1 all_reduce of 842496" or "4 reduce (roots 0 1 2 3) of 842496 in all".
std::string bucket_calls(const GradBucket& b, int world) {
  std::map<Primitive, std::pair<size_t, size_t>> per;  // calls, elements on the wire
  std::map<Primitive, std::vector<int>> roots;
  for (const BucketCall& c : b.calls) {
    auto& x = per[c.primitive];
    x.first++;
    x.second += c.primitive == Primitive::ReduceScatter ? c.count * world : c.count;
    if (c.root >= 0) roots[c.primitive].push_back(c.root);
  }
  std::string s;
  for (const auto& [p, x] : per) {
    if (!s.empty()) s += ", ";
    s += std::to_string(x.first) + " " + primitive_name(p);
    if (!roots[p].empty()) {
      s += " (roots";
      for (int r : roots[p]) s += " " + std::to_string(r);
      s += ")";
    }
    s += " of " + std::to_string(x.second) + (x.first > 1 ? " in all" : "");
  }
  return s.empty() ? "nothing to reduce (an empty bucket)" : s;
}

void print_buckets(const ParamTable& table, const BucketSchedule& g, int world,
                   const std::string& when, const std::string& rule) {
  std::printf("buckets: %zu %s, the largest %zu elements\n  rule: %s\n", g.buckets.size(),
              when.c_str(), g.largest_bucket(), rule.c_str());
  std::printf("  %6s %12s %7s %6s  %-48s %s\n", "bucket", "elements", "tensors", "owners",
              "tensors (arrival order)", "calls (elements on the wire)");
  const size_t n = g.buckets.size();
  for (size_t i = 0; i < n; i++) {
    if (n > kBucketLines && i == kBucketLines / 2) {
      std::printf("  ... %zu buckets more ...\n", n - kBucketLines);
      i = n - kBucketLines / 2;
    }
    const GradBucket& b = g.buckets[i];
    std::printf("  %6zu %12zu %7zu %6zu  %-48s %s\n", i, b.size, b.params.size(), b.owners(),
                tensor_span(table, b).c_str(), bucket_calls(b, world).c_str());
  }
}

void print_totals(const StepPlan& p, int world) {
  std::printf(
      "\nper rank per optimizer step (steady step), payload as nccl-tests counts it, bus = payload "
      "x bus factor:\n");
  std::printf("  %-10s %-14s %-5s %6s %14s %14s %14s %14s\n", "purpose", "primitive", "dtype",
              "calls", "payload B", "bus B", "intra-node B", "inter-node B");
  std::map<std::pair<int, int>, std::string> dtypes;  // (purpose, primitive) -> dtypes seen
  for (const PlannedCall& c : p.steady_step) {
    std::string& d = dtypes[{static_cast<int>(c.purpose), static_cast<int>(c.primitive)}];
    if (d.find(dtype_name(c.dtype)) == std::string::npos)
      d += (d.empty() ? "" : "+") + std::string(dtype_name(c.dtype));
  }
  for (int u = 0; u < static_cast<int>(Purpose::kCount); u++)
    for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
      const PlannedPrimitive& x = p.per_step_by_purpose[u][i];
      if (x.calls == 0) continue;
      std::printf("  %-10s %-14s %-5s %6llu %14llu %14.0f %14.0f %14.0f\n",
                  purpose_name(static_cast<Purpose>(u)), primitive_name(static_cast<Primitive>(i)),
                  dtypes[{u, i}].c_str(), static_cast<unsigned long long>(x.calls),
                  static_cast<unsigned long long>(x.bytes), x.bus_bytes,
                  x.bus_bytes - x.inter_node_bus_bytes, x.inter_node_bus_bytes);
    }
  if (p.stage == 3) {
    std::map<Phase, std::pair<uint64_t, uint64_t>> by_phase;  // calls, payload bytes
    for (const PlannedCall& c : p.steady_step)
      if (c.purpose == Purpose::Parameters) {
        by_phase[c.phase].first++;
        by_phase[c.phase].second += payload_bytes(c.primitive, c.count, c.dtype, world);
      }
    std::printf("  parameter all_gathers by phase:");
    for (const auto& [phase, x] : by_phase)
      std::printf(" %s %llu (%llu B)", phase_name(phase), static_cast<unsigned long long>(x.first),
                  static_cast<unsigned long long>(x.second));
    std::printf("; step: the persistent tensors' refresh\n");
  }
  for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
    const PlannedPrimitive &f = p.first[i], &s = p.per_step[i];
    if (f.calls == s.calls && f.bytes == s.bytes) continue;
    std::printf("  first step (stage 3 records its trace there): %s %llu calls, %llu B payload\n",
                primitive_name(static_cast<Primitive>(i)), static_cast<unsigned long long>(f.calls),
                static_cast<unsigned long long>(f.bytes));
  }
}

uint64_t calls_of(const StepPlan& p, Purpose u, Primitive prim) {
  return p.per_step_by_purpose[static_cast<int>(u)][static_cast<int>(prim)].calls;
}

// Parameter groups: the other grouping, planned.
void print_group_note(const Config& cfg, const ZeroSetup& s, const ParamTable& table, int world,
                      int A, DType model, const NodeMap& nodes, const StepPlan& mine) {
  const std::string other = cfg.train.param_groups == "two" ? "one" : "two";
  ZeroSetup regrouped = s;
  regrouped.groups = make_param_groups(table, other);
  const StepPlan alt = plan_step(regrouped, table, world, A, model, nodes);
  std::printf(
      "- parameter groups: train.param_groups %s gives %zu group(s): %llu norm all_reduce and "
      "%llu parameter all_gather calls per step; with %s (%zu group(s)): %llu and %llu. "
      "DeepSpeed keeps one flat buffer per group, takes one norm per group%s\n",
      cfg.train.param_groups.c_str(), s.groups.size(),
      static_cast<unsigned long long>(calls_of(mine, Purpose::Scalars, Primitive::AllReduce)),
      static_cast<unsigned long long>(calls_of(mine, Purpose::Parameters, Primitive::AllGather)),
      other.c_str(), regrouped.groups.size(),
      static_cast<unsigned long long>(calls_of(alt, Purpose::Scalars, Primitive::AllReduce)),
      static_cast<unsigned long long>(calls_of(alt, Purpose::Parameters, Primitive::AllGather)),
      s.z.stage == 3
          ? " (per sub-group of sub_group_size elements, in float64)"
          : " and, in stages 1/2, all-gathers each group's parameters with its own call");
}

void print_notes(const Config& cfg, const ZeroSetup& s, const ParamTable& table, int world, int A,
                 DType model, const NodeMap& nodes, const std::string& ds_dtype,
                 const StepPlan& mine) {
  const ZeroConfig& z = s.z;
  std::printf("\nnotes:\n");
  if (ds_dtype == "fp16")
    std::printf(
        "- fp16: DeepSpeed checks every step for an overflow of the loss-scaled gradients "
        "(has_overflow, stages 1-3): one more all_reduce of 1 uint8 (MAX) per step, not in the "
        "table (zerotrain has no fp16 mode)\n");
  if (z.stage > 0) print_group_note(cfg, s, table, world, A, model, nodes, mine);
  if (z.stage == 0)
    std::printf(
        "- stage 0: reduce_bucket_size plays no part (fixed 5e8-element buckets); the gradient "
        "norm is local unless gradient_clipping is set (now %g: %s)\n",
        s.grad_clip, s.grad_clip > 0 ? "one 1-element all_reduce per step" : "no norm all_reduce");
  if (z.stage == 1 || z.stage == 2)
    std::printf(
        "- overlap_comm %s%s: %s; the bytes do not change with it\n", yes_no(z.overlap_comm),
        z.overlap_comm_set ? "" : " (not set: DeepSpeed's default for this stage)",
        z.stage == 1 ? (z.overlap_comm ? "stage 1 reduces in the last micro-step's backward, as "
                                         "gradients arrive, on a side stream"
                                       : "stage 1 reduces at the accumulation boundary, walking "
                                         "the groups in forward order")
                     : (z.overlap_comm ? "two bucket buffers, one reduced on a side stream while "
                                         "the next fills"
                                       : "one bucket buffer, each bucket waited for at once"));
  if (z.stage == 3) {
    std::printf(
        "- stage 3: stage3_param_persistence_threshold %lld keeps %zu tensors (%llu elements) "
        "whole on every rank, refreshed after each step with one all_gather each; "
        "stage3_prefetch_bucket_size %lld %s; stage3_max_live_parameters %lld caps prefetch "
        "(never forces a release); stage3_max_reuse_distance %lld keeps a parameter gathered "
        "when its next use is that close; the most parameter bytes gathered at once: %llu\n",
        static_cast<long long>(z.stage3_param_persistence_threshold), mine.persistent_tensors,
        static_cast<unsigned long long>(mine.persistent_bytes / mine.dtype_bytes),
        static_cast<long long>(z.stage3_prefetch_bucket_size),
        z.stage3_prefetch_bucket_size > 0
            ? "> 0: gathers of the coming modules are issued ahead once the first pass has "
              "recorded the order (overlap_comm only picks the stream)"
            : "= 0: no prefetch, every module is gathered when it runs",
        static_cast<long long>(z.stage3_max_live_parameters),
        static_cast<long long>(z.stage3_max_reuse_distance),
        static_cast<unsigned long long>(mine.live_params_peak_bytes));
    if (z.stage3_block_gathers)
      std::printf(
          "- zero.stage3_block_gathers: true is zerotrain's (one gather per transformer block); "
          "DeepSpeed gathers per submodule\n");
  }
  if (z.allgather_bucketed)
    std::printf(
        "- zero.allgather_bucketed: true chunks the parameter all-gather as DeepSpeed before "
        "0.9 did; current DeepSpeed issues one call per group\n");
}

// Everything explain prints, built once: the inputs, the model and the plan
// of the configured step (the same objects a run executes).
struct Explained : PlannedConfig {
  std::string ds_path, config_path;
  // --deepspeed-version's comparison: --compare-to, else the release the
  // config names (or the default); unset without --deepspeed-version.
  bool release_report = false;
  DeepSpeedRelease compare_to;
};

// A release given on the command line, refused in one line outside the
// verified range.
DeepSpeedRelease release_option(const CliArgs& f, const std::string& option) {
  const std::string text = f.get(option);
  try {
    const DeepSpeedRelease r = parse_deepspeed_release(text);
    deepspeed_behaviours(r);
    return r;
  } catch (const std::invalid_argument&) {
    f.fail(option + " " + text + ": expected a DeepSpeed release from " + verified_release_range() +
           " (verified call for call)");
  }
  return {};
}

Explained load_explained(const std::vector<std::string>& args) {
  const CliArgs f = command_args("explain", args);
  const WorldLayout layout = world_layout(f);
  Explained e;
  if (f.has("--config") && f.has("--model")) f.fail("give --config or --model, not both");
  e.config_path = f.has("--config")  ? f.get("--config")
                  : f.has("--model") ? preset_file(f, f.get("--model"))
                                     : preset_file(f, "tiny");
  e.ds_path = f.positional()[0];
  if (f.has("--compare-to") && !f.has("--deepspeed-version"))
    f.fail("--compare-to needs --deepspeed-version");
  std::vector<std::string> sets = f.all("--set");
  if (f.has("--deepspeed-version")) {
    const DeepSpeedRelease v = release_option(f, "--deepspeed-version");
    e.release_report = true;
    // What the config names, before --deepspeed-version replaces it.
    e.compare_to = f.has("--compare-to") ? release_option(f, "--compare-to")
                                         : load_config(e.config_path, sets).zero.deepspeed_version;
    sets.push_back("zero.deepspeed_version=" + v.str());
  }
  plan_config(e, e.config_path, sets, e.ds_path, layout);
  return e;
}

// What partitions the model: the stage, the groups and their padding.
void print_partitioning(const Explained& e) {
  const ZeroConfig& z = e.s.z;
  const ParamTable& table = *e.table;
  std::printf(
      "explain: %s on %s: %zu parameters (Ψ), W = %d (%d node%s of %d ranks), %d micro-steps of "
      "%d sequences per rank per step, DeepSpeed trains in %s\n",
      e.ds_path.c_str(), e.config_path.c_str(), table.total(), e.world, e.nodes.nodes(),
      e.nodes.nodes() == 1 ? "" : "s", e.per_node, e.A, e.cfg.train.micro_batch,
      e.ds_dtype.c_str());
  if (e.grid.tensor > 1 || e.grid.pipeline > 1)
    std::printf(
        "grid: %d data-parallel x %d tensor-parallel x %d pipeline ranks: Ψ is rank 0's part "
        "(tensor shard 0 of pipeline stage 0), and ZeRO below runs over its data-parallel group "
        "of %d\n",
        e.grid.data, e.grid.tensor, e.grid.pipeline, e.grid.data);
  for (const std::string& w : e.warnings) std::printf("deepspeed: %s\n", w.c_str());
  std::printf("\nZeRO stage %d: %s\n", z.stage,
              z.stage == 0   ? "no ZeRO optimizer; DeepSpeed's engine all-reduces the gradients"
              : z.stage == 3 ? "parameters, gradients and optimizer states partitioned "
                               "(stage3.py, DeepSpeedZeroOptimizer_Stage3)"
                             : (z.stage == 1 ? "optimizer states partitioned (stage_1_and_2.py, "
                                               "DeepSpeedZeroOptimizer)"
                                             : "optimizer states and gradients partitioned "
                                               "(stage_1_and_2.py, DeepSpeedZeroOptimizer)"));
  std::printf("parameter groups (train.param_groups: %s): %zu\n", e.cfg.train.param_groups.c_str(),
              e.s.groups.size());
  for (size_t g = 0; g < e.s.groups.size(); g++) {
    size_t elements = 0;
    for (int p : e.s.groups[g].params) elements += table.params()[p].numel;
    std::printf("  group %zu (%s): %zu tensors, %zu elements", g,
                e.s.groups[g].decay ? "weight decay" : "no weight decay",
                e.s.groups[g].params.size(), elements);
    if (z.stage == 1 || z.stage == 2)
      std::printf(", flat buffer %zu elements (%s)", e.mine.group_buffer_elems[g],
                  z.native_reduce_scatter
                      ? "zerotrain's aligned chunks"
                      : "padded to a multiple of 2W, all the padding in the last rank's partition");
    std::printf("\n");
  }
  if (z.stage != 3) return;
  // MiCS's groups (mics_groups.h): the world itself when zero.mics_shard_size is off.
  const MicsGroups g = mics_groups(z, e.world, e.per_node);
  std::printf("  each tensor is split on its own into %d pieces of ceil(numel / %d) elements",
              g.shard.size, g.shard.size);
  if (g.replicated())
    std::printf(
        ", over MiCS's shard groups of %d consecutive ranks, replicated across %d groups "
        "(ranks %d apart); after each bucket's reduce-scatter in the last micro-step, one "
        "all-reduce of the rank's pieces across its replicas (mics.py "
        "allreduce_mics_shard_grads)",
        g.shard.size, g.replica.size, g.replica.stride);
  std::printf("\n");
  if (g.hierarchical)
    std::printf(
        "  parameters gathered across %d nodes (groups of %d ranks %d apart), then inside "
        "the node (%d ranks) (mics.py _hierarchical_all_gather_params); the persistent "
        "tensors' refresh stays one call\n",
        g.inter_node.size, g.inter_node.size, g.inter_node.stride, g.intra_node.size);
}

// The gradient path, the switches that chose it and its buckets.
void print_gradient_path(const Explained& e) {
  const ZeroConfig& z = e.s.z;
  const GradPathRow& path = *e.mine.path;
  std::printf("\ngradient path: %s (%s)\n", path.key.c_str(), path.describe.c_str());
  std::printf("  chosen by: %s\n", path.chosen_by.c_str());
  if (z.stage == 1 || z.stage == 2)
    std::printf(
        "  switches: contiguous_gradients %s, reduce_scatter %s, use_multi_rank_bucket_allreduce "
        "%s, zerotrain's native_reduce_scatter %s (DeepSpeed checks them in that order, "
        "zerotrain's first)\n",
        yes_no(z.contiguous_gradients), yes_no(z.reduce_scatter),
        yes_no(z.use_multi_rank_bucket_allreduce), yes_no(z.native_reduce_scatter));
  if (z.stage == 3)
    std::printf("  switches: reduce_scatter %s, contiguous_gradients %s\n",
                yes_no(z.reduce_scatter), yes_no(z.contiguous_gradients));
  std::printf("  DeepSpeed code: %s\n", path.deepspeed_code.c_str());
  std::printf("  wire dtype: %s (communication_data_type %s)\n",
              dtype_name(gradient_wire_dtype(z, e.model)),
              z.communication_data_type == "auto" ? "not set: the model's dtype"
                                                  : z.communication_data_type.c_str());
  if (z.stage == 1 || z.stage == 2)
    std::printf("  round_robin_gradients %s: %s\n", yes_no(z.round_robin_gradients),
                z.round_robin_gradients
                    ? "tensor i of a group goes to the (i mod W)-th run of the flat buffer, so "
                      "consecutive tensors have different owners and reduces fragment"
                    : "each group's tensors lie in model order in its flat buffer");
  std::printf("\n");
  print_buckets(*e.table, e.mine.grads, e.world, e.mine.when, e.mine.bucket_rule);
}

// The paper's volume beside this config's, each switch's effect and the
// smallest change that reaches the paper, all planned with the same schedules.
void print_volume(const Explained& e) {
  const ZeroConfig& z = e.s.z;
  const StepPlan& mine = e.mine;
  const PaperVolume paper = paper_volume(z.stage, e.table->total(), e.A, e.model);
  const double ring = static_cast<double>(e.world - 1) / e.world;
  const double moved = moved_bytes(mine);
  double grads_moved = 0;
  for (const PlannedPrimitive& x : mine.per_step_by_purpose[static_cast<int>(Purpose::Gradients)])
    grads_moved += x.bus_bytes;
  std::printf(
      "\nvolume per rank per step, gradients + parameters, bus bytes (ZeRO paper: Ψ per "
      "reduce-scatter or all-gather, 2Ψ per all-reduce; a ring moves (W-1)/W of it):\n");
  std::printf("  ZeRO paper, stage %d: %s = %.0f B (ring optimum %.0f B)\n", z.stage,
              paper.formula.c_str(), paper.total(), paper.total() * ring);
  std::printf(
      "  this config: %.0f B gradients + %.0f B parameters = %.0f B = %.2f x the paper, %.2f x "
      "the ring optimum\n",
      grads_moved, moved - grads_moved, moved, moved / paper.total(),
      moved / (paper.total() * ring));

  const std::vector<SwitchChange> switches = switches_deciding_volume(z, e.model);
  const std::vector<PlannedChange> planned =
      plan_changes(e.s, *e.table, e.world, e.A, e.model, e.nodes, switches, 3);
  if (!switches.empty()) {
    std::printf("\neach switch changed on its own (planned with the same schedules):\n");
    std::printf("  %-40s %-22s %16s %8s\n", "change", "gradient path", "bus B", "x paper");
    for (const PlannedChange& c : planned) {
      if (c.changes.size() > 1) continue;
      std::printf("  %-40s %-22s %16.0f %8.2f\n",
                  c.changes.empty() ? "(as configured)" : c.text().c_str(),
                  c.plan.path->key.c_str(), c.moved, c.moved / paper.total());
    }
  }
  const PlannedChange* best = smallest_reaching(planned, paper.total() * (1 + 1e-12));
  std::printf("\nsmallest change of DeepSpeed's switches that reaches the paper's volume: ");
  if (!best) std::printf("none of at most 3 changes among %zu switches\n", switches.size());
  else if (best->changes.empty())
    std::printf("none needed (this config moves %.2f x the paper)\n", moved / paper.total());
  else
    std::printf("set %s (%s: %.0f B, %.2f x the paper, %.2f x the ring optimum)\n",
                best->text().c_str(), best->plan.path->key.c_str(), best->moved,
                best->moved / paper.total(), best->moved / (paper.total() * ring));
  if ((z.stage == 1 || z.stage == 2) && !z.native_reduce_scatter) {
    ZeroSetup native = e.s;
    apply_change(native.z, {"native_reduce_scatter", "true"});
    const StepPlan n = plan_step(native, *e.table, e.world, e.A, e.model, e.nodes);
    std::printf(
        "zerotrain's own (not a DeepSpeed setting): zero.native_reduce_scatter: true: one "
        "reduce-scatter per bucket, %.0f B, %.2f x the paper, %.2f x the ring optimum\n",
        moved_bytes(n), moved_bytes(n) / paper.total(), moved_bytes(n) / (paper.total() * ring));
  }
}

}  // namespace

int run_explain_command(const std::vector<std::string>& args) {
  const Explained e = load_explained(args);
  print_partitioning(e);
  if (e.release_report) print_release_report(e, e.compare_to);
  print_gradient_path(e);
  print_totals(e.mine, e.world);
  print_zeropp(e.mine, e.unquantized, e.s.z, e.world, e.nodes);
  if (e.s.z.offload_optimizer.enabled() || e.s.z.offload_param.enabled())
    print_offload_memory(e.mine, e.s.z, e.per_node);
  print_volume(e);
  print_notes(e.cfg, e.s, *e.table, e.world, e.A, e.model, e.nodes, e.ds_dtype, e.mine);
  return 0;
}

}  // namespace zt
