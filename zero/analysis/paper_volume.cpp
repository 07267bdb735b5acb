#include "zero/analysis/paper_volume.h"

#include <algorithm>

namespace zt {

PaperVolume paper_volume(int stage, uint64_t psi, int A, DType model) {
  const double bytes = static_cast<double>(psi) * dtype_size(model);
  const std::string of = std::to_string(psi) + " elements of " + dtype_name(model);
  const std::string a = std::to_string(A);
  PaperVolume v;
  switch (stage) {
    case 0:
      v.grads_bytes = 2 * bytes;
      v.formula = "2Ψ, Ψ = " + of;
      break;
    case 1:
      v.grads_bytes = bytes;
      v.params_bytes = bytes;
      v.formula = "Ψ + Ψ, Ψ = " + of;
      break;
    case 2:
      v.grads_bytes = A * bytes;
      v.params_bytes = bytes;
      v.formula = "A·Ψ + Ψ, A = " + a + ", Ψ = " + of;
      break;
    default:
      v.grads_bytes = A * bytes;
      v.params_bytes = 2.0 * A * bytes;
      v.formula = "A·(Ψ + Ψ + Ψ), A = " + a + ", Ψ = " + of;
  }
  return v;
}

double moved_bytes(const StepPlan& plan) {
  double sum = 0;
  for (Purpose u : {Purpose::Gradients, Purpose::Parameters})
    for (const PlannedPrimitive& p : plan.per_step_by_purpose[static_cast<int>(u)])
      sum += p.bus_bytes;
  return sum;
}

std::vector<SwitchChange> switches_deciding_volume(const ZeroConfig& z, DType model) {
  std::vector<SwitchChange> out;
  if (z.stage == 0) return out;
  auto flip = [&](const char* key, bool now) { out.push_back({key, now ? "false" : "true"}); };
  flip("reduce_scatter", z.reduce_scatter);
  if (z.stage < 3) flip("use_multi_rank_bucket_allreduce", z.use_multi_rank_bucket_allreduce);
  flip("contiguous_gradients", z.contiguous_gradients);
  if (z.stage < 3) flip("round_robin_gradients", z.round_robin_gradients);
  if (gradient_wire_dtype(z, model) != model)
    out.push_back({"communication_data_type", dtype_name(model)});
  return out;
}

std::string PlannedChange::text() const {
  if (changes.empty()) return "(none)";
  std::string s;
  for (const SwitchChange& c : changes) s += (s.empty() ? "" : ", ") + c.text();
  return s;
}

std::vector<PlannedChange> plan_changes(const ZeroSetup& s, const ParamTable& table, int world,
                                        int A, DType model, const NodeMap& nodes,
                                        const std::vector<SwitchChange>& switches, int max_size) {
  std::vector<PlannedChange> out;
  const size_t n = switches.size();
  for (uint32_t mask = 0; mask < (1u << n); mask++) {
    if (__builtin_popcount(mask) > max_size) continue;
    PlannedChange c;
    ZeroSetup changed = s;
    for (size_t i = 0; i < n; i++)
      if (mask & (1u << i)) {
        c.changes.push_back(switches[i]);
        apply_change(changed.z, switches[i]);
      }
    c.plan = plan_step(changed, table, world, A, model, nodes);
    c.moved = moved_bytes(c.plan);
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const PlannedChange& a, const PlannedChange& b) {
    return a.changes.size() < b.changes.size();
  });
  return out;
}

const PlannedChange* smallest_reaching(const std::vector<PlannedChange>& planned, double limit) {
  auto calls = [](const PlannedChange& c) {
    uint64_t k = 0;
    for (const PlannedPrimitive& p : c.plan.per_step) k += p.calls;
    return k;
  };
  const PlannedChange* best = nullptr;
  for (const PlannedChange& c : planned) {
    if (c.moved > limit) continue;
    if (best && c.changes.size() > best->changes.size()) break;
    if (!best || c.moved < best->moved || (c.moved == best->moved && calls(c) < calls(*best)))
      best = &c;
  }
  return best;
}

}  // namespace zt
