#include "zero/stages/mics_comms.h"

namespace zt {

MicsComms::MicsComms(const MicsGroups& g, Communicator& world) : groups_(g), world_(world) {
  const int r = world.rank();
  if (g.shard.size < world.world()) shard_ = world.subgroup(g.shard.members_of(r));
  if (g.replicated()) replica_ = world.subgroup(g.replica.members_of(r));
  if (g.hierarchical) {
    inter_node_ = world.subgroup(g.inter_node.members_of(r));
    intra_node_ = world.subgroup(g.intra_node.members_of(r));
  }
}

}  // namespace zt
