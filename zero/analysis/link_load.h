// Which links a call keeps busy, and how calls issued together share them: the
// step-time model's rule for concurrent calls (docs/step_time_model.md,
// "Calls issued together").
//
// Links: each node's link in each direction (full duplex: out and in are two
// links) and each rank's intra-node sends. A collective over the world that
// every rank runs alike (ring all-reduce, reduce-scatter, all-gather,
// all-to-all, broadcast, and any call over sub-groups, which run in every group
// at once) keeps every link busy for its whole time. A rooted reduce does not:
// its bytes follow its algorithm's edges (ReduceAlgorithm). A call alone takes
// its time on its busiest link; a link's share of the call is its seconds
// (bytes at its rate) over the busiest link's.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "zero/analysis/plan.h"

namespace zt {

struct LinkFigures;

// How a rooted reduce of n bytes travels, vrank v standing for rank v except
// that the root and rank 0 swap places (libnbc's RANK2VRANK):
// - Chain: vrank v sends n to v - 1, pipelined in segments. NCCL's ring, and
//   Open MPI's libnbc where coll_libnbc_ireduce_algorithm is 1, as
//   scripts/cluster.sh sets it on every emulated cluster (on 8 x 1 only the
//   last rank finishes before any byte arrives: measured, docs/PMBS.md).
// - LibnbcDefault: Open MPI 4.1's own choice (nbc_ireduce.c) for a sum:
//   Rabenseifner's reduce-scatter by recursive halving then a binomial gather
//   to the root (Thakur, Rabenseifner and Gropp 2005; W' = the largest power
//   of two <= W, the first 2(W - W') ranks paired down to W' first) when
//   W > 2 and the count is at least W'; else a binomial tree (vrank v sends n
//   to v with its lowest set bit cleared) above 4 ranks or under 64 KiB; else
//   the chain.
enum class ReduceAlgorithm { Chain, LibnbcDefault };

// One message of a call: `bytes` from rank `from` to rank `to`.
struct ReduceEdge {
  int from = 0, to = 0;
  double bytes = 0;
};

// Every message of a rooted reduce of `count` elements of `element_bytes`
// over `world` ranks to `root`, by `algorithm`.
std::vector<ReduceEdge> reduce_edges(ReduceAlgorithm algorithm, int world, int root, uint64_t count,
                                     uint64_t element_bytes);

// The busy share of each link a call loads (1 on its busiest); uniform: every
// link for the whole call (shares left empty).
struct LinkLoad {
  bool uniform = true;
  std::vector<std::pair<int, double>> shares;  // (link index, share)
  double transfer_s = 0;                       // the busiest link's seconds (reduces only)
};

// 2 x nodes + world links: node k's out (k) and in (nodes + k), rank r's
// intra-node sends (2 nodes + r).
int link_count(const NodeMap& nodes, int world);

// A call's load on links of figures f, a rooted reduce's by `algorithm`.
LinkLoad call_link_load(const PlannedCall& c, int world, const NodeMap& nodes, const LinkFigures& f,
                        ReduceAlgorithm algorithm);

// Per-link FIFO: a link serves the calls that load it in issue order, each
// for its share of the call's time, beside the other links. A set of calls
// issued together (no wait between them) ends when its busiest link is done;
// a call that loads every link waits for all of them, so symmetric calls in
// sequence add up as on one channel. Symmetric calls cost O(1), not O(links).
class LinkClock {
 public:
  explicit LinkClock(int links) : busy_(static_cast<size_t>(links), 0) {}
  // Issues calls (seconds alone, load) at `at`; returns when the last is done.
  double issue(const std::vector<std::pair<double, const LinkLoad*>>& calls, double at);
  double all_done() const { return std::max(floor_, top_ + shift_); }
  // When what the links still hold at `at` ends if `calls` join it there and
  // every link serves its calls side by side, in equal shares, instead of in
  // order: on a link with b seconds left and w joining, b + min(b, w) after
  // `at`. Open MPI's non-blocking collectives in flight together progress
  // side by side; NCCL's on one stream run in order (issue's rule).
  double shared_end(const std::vector<std::pair<double, const LinkLoad*>>& calls, double at) const;

 private:
  // A link is free at max(floor_, busy_[l] + shift_): uniform calls move the
  // floor and shift every link at once.
  std::vector<double> busy_;
  double floor_ = 0, shift_ = 0, top_ = 0;  // top_: the largest busy_
};

}  // namespace zt
