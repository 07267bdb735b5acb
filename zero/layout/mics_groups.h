// MiCS's rank groups, as DeepSpeed's mics_utils.create_mics_comm_groups forms
// them (v0.14.4): the world cut into shard groups of S = zero.mics_shard_size
// consecutive ranks, which partition parameters, gradients and optimizer state
// as stage 3 partitions them over the world; replica groups of the W / S ranks
// with one index in their shard group (r, r + S, r + 2S, ...), which hold
// identical shards. With zero.mics_hierarchical_params_gather the shard group
// spans N = S / L nodes (L = ranks per node, DeepSpeed's NDEV_PER_NODE):
// parameter all-gathers run first across the nodes (groups of the N ranks with
// one local index, L apart), then inside the node (L consecutive ranks).
// The one place these groups are decided: the stage-3 schedule, the engine,
// the memory formula and the checkpoint's replica question all read them here.
#pragma once
#include <string>
#include <vector>

#include "zero/comm/communicator.h"
#include "zero/zero_config.h"

namespace zt {

struct MicsGroups {
  bool enabled = false;  // zero.mics_shard_size set (S = W included: plain stage 3's calls)
  RankGroup shard;       // {S, 1}: the world {W, 1} when MiCS is off
  RankGroup replica;     // {W / S, S}: {1, W} when MiCS is off
  bool hierarchical = false;
  RankGroup inter_node;  // {N, L}: hierarchical gathers, first call
  RankGroup intra_node;  // {L, 1}: hierarchical gathers, second call
  bool replicated() const { return replica.size > 1; }
  // The block of a hierarchical gather's output that shard rank s's piece
  // lands in (s itself for a flat gather): the intra-node call concatenates
  // each local rank's inter-node result.
  int gathered_block(int shard_rank) const;
};

// Throws std::invalid_argument (one line naming the key) when S does not
// divide W, MiCS is asked for below stage 3 or beside ZeRO++ or offload, or the
// hierarchical gather has no two nodes to span. ranks_per_node matters only to
// the hierarchical gather.
MicsGroups mics_groups(const ZeroConfig& z, int world, int ranks_per_node);

// Why the hierarchical gather cannot run with nodes of ranks_per_node ranks
// ("" when it can, or is off): the check mics_groups makes, for callers that
// know the placement before any engine (a config error there).
std::string mics_placement_problem(const ZeroConfig& z, int ranks_per_node);

// The ranks each sharded state is split over: S with MiCS, else W (stage 3's
// layout, the memory formulas). No world-size check: mics_groups makes it.
int shard_ranks(const ZeroConfig& z, int world);

}  // namespace zt
