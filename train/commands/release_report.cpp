#include "train/commands/release_report.h"

#include <cstdio>
#include <string>
#include <vector>

#include "zero/analysis/plan.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

// One behaviour as explain prints it: what it is at a release, and whether it
// can change the calls of this config (its stage, dtype and switches).
struct Behaviour {
  std::string name;
  std::string (*at)(const DeepSpeedBehaviours& b, const ZeroConfig& z, DType model);
  bool (*matters)(const ZeroConfig& z, DType model);
};

bool stages12(const ZeroConfig& z) {
  return (z.stage == 1 || z.stage == 2) && !z.native_reduce_scatter;
}

const std::vector<Behaviour>& behaviours() {
  static const std::vector<Behaviour> list = {
      {"use_multi_rank_bucket_allreduce (stages 1/2)",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.has_multi_rank_bucket_allreduce
                    ? "the key exists, default true: the owners' slices all-reduced together"
                    : "no such key (0.12.4 adds it): one rooted reduce per owner slice";
       },
       [](const ZeroConfig& z, DType) { return stages12(z) && z.reduce_scatter; }},
      {"use_multi_rank_bucket_allreduce: false (stages 1/2)",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.per_owner_path_reduces
                    ? "rooted reduces to each owner"
                    : "all-reduces of each owner's runs (allreduce_bucket drops the root, "
                      "0.12.4-0.12.6)";
       },
       [](const ZeroConfig& z, DType) {
         return stages12(z) && z.reduce_scatter && !z.use_multi_rank_bucket_allreduce;
       }},
      {"stage 1's overlap_comm, round_robin_gradients, contiguous_gradients",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.stage1_forces_switches_off ? "forced off by the engine (before 0.13.0)"
                                             : "as configured";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 1 && !z.native_reduce_scatter; }},
      {"reduce_scatter: false (stages 1/2)",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         if (b.allreduce_path_sends_whole_buffer)
           return "all-reduces the whole buffer of reduce_bucket_size elements (before 0.14.1)";
         return b.allreduce_path_reduces_empty_bucket
                    ? "all-reduces the filled part of the bucket, an empty one too (0.14.1-0.14.4)"
                    : "all-reduces the filled part of the bucket; an empty one issues nothing "
                      "(from 0.14.5)";
       },
       [](const ZeroConfig& z, DType) { return stages12(z) && !z.reduce_scatter; }},
      {"overflow check (stages 1-3)",
       [](const DeepSpeedBehaviours& b, const ZeroConfig& z, DType model) -> std::string {
         return b.overflow_check(model, z)
                    ? std::string("one all_reduce of 1 uint8 per step (") + dtype_name(model) +
                          " training)"
                    : std::string("none in ") + dtype_name(model) + " training";
       },
       [](const ZeroConfig& z, DType) { return z.stage > 0; }},
      {"stage 3's first prefetch bucket",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.stage3_regathers_first_bucket
                    ? "gathered afresh in every micro-step's forward (from 0.19.3)"
                    : "the embeddings stay gathered between micro-steps";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 3; }},
      {"stage 3's gradient order",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.stage3_linear_weight_grad_first
                    ? "a Linear's weight gradient before its bias's (from 0.19.4)"
                    : "a Linear's bias gradient before its weight's";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 3; }},
      {"hpZ's forward gathers",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.hpz_forward_reads_secondary
                    ? "read the secondary pieces where a tensor has one, zero.Init's in the first "
                      "step (from 0.13.2)"
                    : "cross the data-parallel group; only backward gathers read the secondary "
                      "pieces";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 3 && z.zero_hpz_partition_size > 1; }},
      {"start-up parameter broadcast",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType model) -> std::string {
         return b.startup_broadcast_as_bytes
                    ? std::string("each tensor as uint8 bytes (from 0.19.8)")
                    : std::string("each tensor in ") + dtype_name(model);
       },
       [](const ZeroConfig&, DType) { return true; }},
      {"stage 1/2 start-up barrier",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         return b.stage12_startup_barrier ? "one barrier() in the optimizer's construction"
                                          : "none (from 0.11.0)";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 1 || z.stage == 2; }},
      {"stage 3's trace check (first step)",
       [](const DeepSpeedBehaviours& b, const ZeroConfig&, DType) -> std::string {
         if (!b.stage3_trace_check_in_forward)
           return "3 int64 broadcasts at the end of micro-step 0's backward";
         return b.stage3_trace_check_sends_length
                    ? "in the forwards, each list after a broadcast of its length: 8 broadcasts "
                      "(from 0.17.6)"
                    : "in the forwards: 1 empty in micro-step 0, 3 in micro-step 1 (from 0.15.4)";
       },
       [](const ZeroConfig& z, DType) { return z.stage == 3; }},
  };
  return list;
}

std::string steady_summary(const StepPlan& p) {
  uint64_t calls = 0, bytes = 0;
  for (const PlannedPrimitive& x : p.per_step) {
    calls += x.calls;
    bytes += x.bytes;
  }
  return std::to_string(calls) + " calls, " + std::to_string(bytes) + " B payload per rank";
}

}  // namespace

void print_release_report(const PlannedConfig& e, const DeepSpeedRelease& compare_to) {
  const ZeroConfig& z = e.s.z;
  const DeepSpeedBehaviours now = deepspeed_behaviours(z.deepspeed_version);
  const DeepSpeedBehaviours other = deepspeed_behaviours(compare_to);
  std::printf(
      "\nDeepSpeed release %s (zero.deepspeed_version; verified call for call: %s), what it does "
      "with this config:\n",
      now.release.str().c_str(), verified_release_range().c_str());
  for (const Behaviour& b : behaviours())
    if (b.matters(z, e.model))
      std::printf("  - %s: %s\n", b.name.c_str(), b.at(now, z, e.model).c_str());
  std::printf("  gradient path: %s\n", e.mine.path->key.c_str());

  std::printf("\nchanges from DeepSpeed %s to %s for this config:\n", other.release.str().c_str(),
              now.release.str().c_str());
  int changed = 0;
  for (const Behaviour& b : behaviours()) {
    if (!b.matters(z, e.model)) continue;
    const std::string was = b.at(other, z, e.model), is = b.at(now, z, e.model);
    if (was == is) continue;
    std::printf("  - %s:\n      %s: %s\n      %s: %s\n", b.name.c_str(),
                other.release.str().c_str(), was.c_str(), now.release.str().c_str(), is.c_str());
    changed++;
  }
  if (changed == 0) std::printf("  none that this config can see\n");
  ZeroSetup s = e.s;
  s.z.deepspeed_version = compare_to;
  const StepPlan was = plan_step(s, *e.table, e.world, e.A, e.model, e.nodes);
  std::printf("  steady step, planned with the same schedules: %s: %s (%s); %s: %s (%s)\n",
              other.release.str().c_str(), steady_summary(was).c_str(), was.path->key.c_str(),
              now.release.str().c_str(), steady_summary(e.mine).c_str(), e.mine.path->key.c_str());
}

}  // namespace zt
