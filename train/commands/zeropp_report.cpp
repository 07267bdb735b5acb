// plan's and explain's ZeRO++ lines (train/commands/zeropp_report.h).
#include "train/commands/zeropp_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace zt {

// What ZeRO++ adds to the configured plan: hpZ's memory, and the quantized
// calls' codes and scales against the same step unquantized.
void print_zeropp(const StepPlan& mine, const StepPlan& unquantized, const ZeroConfig& z, int world,
                  const NodeMap& nodes) {
  if (z.stage != 3) return;
  if (z.zero_hpz_partition_size > 1)
    std::printf(
        "hpZ: secondary partition over groups of %d consecutive ranks: up to %llu B per rank on "
        "top of params B (each tensor's piece W/hpz times over, from its first release until the "
        "step)\n",
        std::min(z.zero_hpz_partition_size, world),
        static_cast<unsigned long long>(mine.hpz_secondary_bytes));
  auto sums = [&](const StepPlan& p, Purpose u, bool scales) {
    std::vector<PlannedCall> picked;
    for (const PlannedCall& c : p.steady_step)
      if (c.purpose == u && c.scales == scales) picked.push_back(c);
    double payload = 0, inter = 0;
    for (const PlannedPrimitive& x : totals(picked, world, nodes)) {
      payload += x.bytes;
      inter += x.inter_node_bus_bytes;
    }
    return std::make_pair(payload, inter);
  };
  for (Purpose u : {Purpose::Parameters, Purpose::Gradients}) {
    const bool on =
        u == Purpose::Parameters ? z.zero_quantized_weights : z.zero_quantized_gradients;
    if (!on) continue;
    const auto codes = sums(mine, u, false), scales = sums(mine, u, true);
    const auto plain = sums(unquantized, u, false);
    std::printf(
        "%s, %s per step: %.0f B payload (%.0f B of it fp32 scales, %.2f%% of the rest) against "
        "%.0f B unquantized (%.3fx); inter-node bus %.0f B against %.0f B (%.3fx)\n",
        u == Purpose::Parameters ? "qwZ" : "qgZ",
        u == Purpose::Parameters ? "parameter gathers" : "gradient reduction",
        codes.first + scales.first, scales.first,
        codes.first > 0 ? 100.0 * scales.first / codes.first : 0.0, plain.first,
        plain.first > 0 ? (codes.first + scales.first) / plain.first : 0.0,
        codes.second + scales.second, plain.second,
        plain.second > 0 ? (codes.second + scales.second) / plain.second : 0.0);
  }
}

}  // namespace zt
