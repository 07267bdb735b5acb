#include "train/commands/offload_report.h"

#include <cstdio>

#include "zero/optim/offload_optimizer.h"

namespace zt {

void print_offload_memory(const StepPlan& p, const ZeroConfig& z, int per_node) {
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  const ModelStatesPlacement& w = p.placement;
  const OptimizerOffloadPlan& o = p.optimizer_offload;
  std::printf(
      "\noffload (configured variant): zero.offload_optimizer.device %s, "
      "zero.offload_param.device %s\n",
      z.offload_optimizer.device.c_str(), z.offload_param.device.c_str());
  std::printf("  %-22s %14s %14s %14s %16s\n", "memory", "params B", "grads B", "optimizer B",
              "model states B");
  std::printf("  %-22s %14llu %14llu %14llu %16llu\n", "per device (rank)", u(w.device.params),
              u(w.device.grads), u(w.device.optimizer), u(w.device.total()));
  std::printf("  %-22s %14llu %14llu %14llu %16llu\n", "host, per rank", u(w.host.params),
              u(w.host.grads), u(w.host.optimizer), u(w.host.total()));
  std::printf("  %-22s %14llu %14llu %14llu %16llu\n", "nvme, per rank", u(w.nvme.params),
              u(w.nvme.grads), u(w.nvme.optimizer), u(w.nvme.total()));
  std::printf("  per host (%d rank%s): %llu B host memory, %llu B nvme\n", per_node,
              per_node == 1 ? "" : "s", u(w.host.total() * per_node), u(w.nvme.total() * per_node));
  if (!z.offload_optimizer.enabled()) return;
  std::printf(
      "  optimizer: %zu elements per rank streamed in %zu chunk%s of %zu (min(shard, "
      "sub_group_size, %zu)); host: %llu B state + %llu B chunk buffers (%d) + %llu B gradients "
      "(the shard's, copied as backward finishes them) + %llu B upload and fp32 staging\n",
      o.shard, o.chunks, o.chunks == 1 ? "" : "s", o.chunk, kOffloadMaxChunk, u(o.host_state_bytes),
      u(o.host_buffer_bytes), o.buffers, u(o.host_grad_bytes), u(o.host_staging_bytes));
}

}  // namespace zt
