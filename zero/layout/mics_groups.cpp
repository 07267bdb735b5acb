#include "zero/layout/mics_groups.h"

#include <stdexcept>
#include <string>

namespace zt {

int MicsGroups::gathered_block(int s) const {
  if (!hierarchical) return s;
  const int L = intra_node.size, N = inter_node.size;
  return (s % L) * N + s / L;
}

// _generate_mics_config: span = S // L nodes, which must be more than one and divide S.
std::string mics_placement_problem(const ZeroConfig& z, int ranks_per_node) {
  if (!z.mics_hierarchical_params_gather || z.mics_shard_size <= 0 || z.stage != 3) return "";
  const int S = z.mics_shard_size;
  const int span = ranks_per_node > 0 ? S / ranks_per_node : 0;
  if (span > 1 && S % span == 0) return "";
  return "the shard group of " + std::to_string(S) + " ranks must span several nodes of " +
         std::to_string(ranks_per_node) +
         " ranks (DeepSpeed asserts 'sharding spans on single node, no need for hierarchy "
         "allgather')";
}

int shard_ranks(const ZeroConfig& z, int world) {
  return z.stage == 3 && z.mics_shard_size > 0 ? z.mics_shard_size : world;
}

MicsGroups mics_groups(const ZeroConfig& z, int world, int ranks_per_node) {
  MicsGroups g;
  const int S = shard_ranks(z, world);
  if (z.mics_shard_size > 0 && z.stage != 3)
    throw std::invalid_argument("zero.mics_shard_size " + std::to_string(z.mics_shard_size) +
                                ": MiCS shards at stage 3 only (DeepSpeed builds its MiCS "
                                "optimizer in the stage-3 branch), got stage " +
                                std::to_string(z.stage));
  if (world % S != 0)
    throw std::invalid_argument("zero.mics_shard_size " + std::to_string(S) +
                                " does not divide the world size " + std::to_string(world) +
                                " (DeepSpeed asserts it)");
  if (z.mics_shard_size > 0) {
    // DeepSpeed's MiCS optimizer takes none of ZeRO++'s switches (it drops them
    // silently) and raises "Local sharding has no support for CPU offloading".
    const char* other = z.zero_hpz_partition_size > 1   ? "zero.zero_hpz_partition_size"
                        : z.zero_quantized_weights      ? "zero.zero_quantized_weights"
                        : z.zero_quantized_gradients    ? "zero.zero_quantized_gradients"
                        : z.offload_optimizer.enabled() ? "zero.offload_optimizer.device"
                        : z.offload_param.enabled()     ? "zero.offload_param.device"
                                                        : nullptr;
    if (other)
      throw std::invalid_argument("zero.mics_shard_size " + std::to_string(S) + " with " + other +
                                  ": MiCS takes neither ZeRO++ nor offload (DeepSpeed ignores "
                                  "ZeRO++ there and refuses offload)");
  }
  g.enabled = z.mics_shard_size > 0;
  g.shard = {S, 1};
  g.replica = {world / S, S};
  g.inter_node = {1, 1};
  g.intra_node = {S, 1};
  if (!z.mics_hierarchical_params_gather || z.mics_shard_size <= 0) return g;
  const std::string problem = mics_placement_problem(z, ranks_per_node);
  if (!problem.empty())
    throw std::invalid_argument("zero.mics_hierarchical_params_gather: " + problem);
  const int span = S / ranks_per_node;
  g.hierarchical = true;
  g.intra_node = {S / span, 1};
  g.inter_node = {span, S / span};
  return g;
}

}  // namespace zt
