// The communicators of MiCS's groups (mics_groups.h), split from the world
// once, in the same order on every rank: the shard group (the world itself
// when S = W, so that plain ZeRO-3 issues exactly its own calls), the replica
// group, and the hierarchical gather's inter- and intra-node groups.
#pragma once
#include <memory>

#include "zero/comm/communicator.h"
#include "zero/layout/mics_groups.h"

namespace zt {

class MicsComms {
 public:
  MicsComms(const MicsGroups& groups, Communicator& world);
  const MicsGroups& groups() const { return groups_; }
  Communicator& shard() { return shard_ ? *shard_ : world_; }
  // Only where the groups have them (replicated(), hierarchical).
  Communicator& replica() { return *replica_; }
  Communicator& inter_node() { return *inter_node_; }
  Communicator& intra_node() { return *intra_node_; }

 private:
  MicsGroups groups_;
  Communicator& world_;
  std::unique_ptr<Communicator> shard_, replica_, inter_node_, intra_node_;
};

}  // namespace zt
