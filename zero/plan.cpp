#include "zero/plan.h"

#include <cstdint>
#include <stdexcept>

#include "zero/bucket_plan.h"
#include "zero/grad_path.h"
#include "zero/stage3_layout.h"
#include "zero/stages.h"

namespace zt {
namespace {

// Lets the gradient path objects describe their collectives for a world size
// without a job: planning never issues a call.
class PlanningCommunicator : public Communicator {
 public:
  explicit PlanningCommunicator(int world) : world_(world) {}
  int rank() const override { return 0; }
  int world() const override { return world_; }
  std::string name() const override { return "plan"; }
  Handle all_reduce(void*, size_t, DType) override { return refuse(); }
  Handle reduce_scatter(const void*, void*, size_t, DType) override { return refuse(); }
  Handle all_gather(const void*, void*, size_t, DType) override { return refuse(); }
  Handle reduce(const void*, void*, size_t, DType, int) override { return refuse(); }
  Handle broadcast(void*, size_t, DType, int) override { return refuse(); }
  void barrier() override {}
  [[noreturn]] void abort(const std::string& why) override { throw std::logic_error(why); }

 private:
  static Handle refuse() { throw std::logic_error("the planning communicator issues no calls"); }
  int world_;
};

class Tally {
 public:
  Tally(StepPlan& p, int world, DType t) : plan_(p), world_(world), t_(t) {}
  void add(Primitive p, size_t count, uint64_t times = 1, bool gradient = false,
           DType t_override = DType::F32, bool use_override = false) {
    const DType t = use_override ? t_override : t_;
    PlannedPrimitive& s = plan_.per_step[static_cast<int>(p)];
    const uint64_t bytes = payload_bytes(p, count, t, world_);
    s.calls += times;
    s.bytes += bytes * times;
    s.bus_bytes += bytes * bus_factor(p, world_) * times;
    if (gradient)
      plan_.gradient_bus_bytes += static_cast<uint64_t>(bytes * bus_factor(p, world_)) * times;
  }
  void norm_all_reduce() { add(Primitive::AllReduce, 1, 1, false, DType::F32, true); }

 private:
  StepPlan& plan_;
  int world_;
  DType t_;
};

void plan_param_gather(const ZeroConfig& z, const Partition& part, Tally& tally) {
  const int W = part.world();
  for (const FlatRange& g : part.groups()) {
    const size_t slice = g.size() / W;
    if (!z.allgather_bucketed) {
      tally.add(Primitive::AllGather, slice);
      continue;
    }
    const size_t chunk = std::max<size_t>(1, static_cast<size_t>(z.allgather_bucket_size) / W);
    for (size_t c = 0; c < slice; c += chunk)
      tally.add(Primitive::AllGather, std::min(chunk, slice - c));
  }
}

}  // namespace

StepPlan plan_step(const ZeroConfig& z, const ParamTable& table, int W, int A, DType t,
                   const std::vector<int>& unit_trace) {
  StepPlan plan;
  plan.stage = z.stage;
  Tally tally(plan, W, t);
  const uint64_t es = dtype_size(t);
  PlanningCommunicator comm(W);

  if (z.stage == 0) {
    plan.grad_path = "allreduce";
    for (FlatRange c : split_range({0, table.total()}, z.reduce_bucket_size))
      tally.add(Primitive::AllReduce, c.size(), 1, true);
    plan.padded_params = Partition::pad(table.total(), W);
    plan.params_bytes = es * plan.padded_params;
    plan.grads_bytes = es * plan.padded_params;
    plan.optimizer_bytes = 12 * plan.padded_params;
    plan.first_step = plan.per_step;
    return plan;
  }
  if (z.stage == 3) return plan_stage3_step(z, table, W, A, t, unit_trace);

  Partition part = stage12_partition(z, table, W);
  std::unique_ptr<GradPath> path = make_grad_path(z, part, comm);
  plan.grad_path = path->key();
  const uint64_t rounds = z.stage == 2 ? static_cast<uint64_t>(A) : 1;
  for (FlatRange b : stage12_buckets(z, table, part))
    for (const Collective& c : path->schedule(b)) tally.add(c.primitive, c.count, rounds, true);
  tally.norm_all_reduce();
  plan_param_gather(z, part, tally);
  plan.padded_params = part.padded_total();
  plan.params_bytes = es * part.padded_total();
  plan.grads_bytes = es * (z.stage == 1 ? part.padded_total() : part.shard_size());
  plan.optimizer_bytes = 12 * part.shard_size();
  plan.first_step = plan.per_step;
  return plan;
}

}  // namespace zt
