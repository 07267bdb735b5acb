#include "zero/analysis/link_load.h"

#include "zero/analysis/step_time_model.h"

namespace zt {

int link_count(const NodeMap& nodes, int world) { return 2 * nodes.nodes() + world; }

namespace {

// libnbc's vrank: the root and rank 0 swap places; the map is its own inverse.
int swapped(int r, int root) { return r == 0 ? root : r == root ? 0 : r; }

// Rabenseifner's reduce as libnbc schedules it (red_sched_redscat_gather):
// pairing down to W' ranks, the reduce-scatter by recursive halving, then the
// gather to the root in reverse order, each rank sending the window it holds.
void rabenseifner_edges(int world, int root, uint64_t count, uint64_t es,
                        std::vector<ReduceEdge>& out) {
  int steps = 0;
  while ((2 << steps) <= world) steps++;
  const int pof2 = 1 << steps, rem = world - pof2;
  auto real = [&](int v) { return v < rem ? 2 * v : v + rem; };
  auto send = [&](int from, int to, uint64_t n) {
    out.push_back({from, to, static_cast<double>(n * es)});
  };
  // Step 1: of the first 2·rem ranks, each even one sends its right half to
  // the odd one above it, which returns its left half and then the reduced
  // right half, and drops out.
  for (int r = 0; r + 1 < 2 * rem; r += 2) {
    send(r, r + 1, count - count / 2);
    send(r + 1, r, count);
  }
  // Step 2, per remaining vrank: the window it keeps at each step; it sends the rest.
  std::vector<std::vector<uint64_t>> kept(static_cast<size_t>(pof2));
  for (int v = 0; v < pof2; v++) {
    uint64_t window = count;
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int peer = v ^ mask;
      const uint64_t keep = v < peer ? window / 2 : window - window / 2;
      kept[v].push_back(keep);
      send(real(v), real(peer), window - keep);
      window = keep;
    }
  }
  // The gather's root: an odd root of the paired ranks takes vrank 0's place,
  // which first hands it the block vrank 0 holds.
  const int vroot = root < 2 * rem ? (root % 2 ? 0 : root / 2) : root - rem;
  const bool root_replaces_zero = root < 2 * rem && root % 2 != 0;
  if (root_replaces_zero) send(0, root, kept[0].back());
  // Step 3: distance halving; a rank sends what it holds to the peer whose
  // subtree holds the root, then leaves.
  for (int v = 0; v < pof2; v++) {
    if (v == vroot) continue;
    for (int step = steps - 1; step >= 0; step--) {
      const int peer = v ^ (1 << step);
      if ((peer >> step) == (vroot >> step)) {
        const int to = root_replaces_zero && peer == 0 ? root : real(peer);
        send(real(v), to, kept[v][static_cast<size_t>(step)]);
        break;
      }
    }
  }
}

}  // namespace

std::vector<ReduceEdge> reduce_edges(ReduceAlgorithm algorithm, int world, int root, uint64_t count,
                                     uint64_t element_bytes) {
  std::vector<ReduceEdge> edges;
  if (world <= 1) return edges;
  const double n = static_cast<double>(count * element_bytes);
  const bool libnbc = algorithm == ReduceAlgorithm::LibnbcDefault;
  int pof2 = 1;
  while (2 * pof2 <= world) pof2 *= 2;
  if (libnbc && world > 2 && count >= static_cast<uint64_t>(pof2)) {
    rabenseifner_edges(world, root, count, element_bytes, edges);
    return edges;
  }
  const bool tree = libnbc && (world > 4 || n < 65536);
  for (int v = 1; v < world; v++)
    edges.push_back({swapped(v, root), swapped(tree ? (v & (v - 1)) : v - 1, root), n});
  return edges;
}

LinkLoad call_link_load(const PlannedCall& c, int world, const NodeMap& nodes, const LinkFigures& f,
                        ReduceAlgorithm algorithm) {
  LinkLoad load;
  const int W = c.group.size > 0 ? c.group.size : world;
  if (c.primitive != Primitive::Reduce || W != world || world <= 1 || c.root < 0) return load;
  const int N = nodes.nodes();
  std::vector<double> bytes(static_cast<size_t>(link_count(nodes, world)), 0);
  for (const ReduceEdge& e : reduce_edges(algorithm, world, c.root, c.count, dtype_size(c.dtype))) {
    const int a = nodes.node_of[static_cast<size_t>(e.from)];
    const int b = nodes.node_of[static_cast<size_t>(e.to)];
    if (a != b) {
      bytes[static_cast<size_t>(a)] += e.bytes;
      bytes[static_cast<size_t>(N + b)] += e.bytes;
    } else {
      bytes[static_cast<size_t>(2 * N + e.from)] += e.bytes;
    }
  }
  for (size_t l = 0; l < bytes.size(); l++) {
    const bool node_link = l < static_cast<size_t>(2 * N);
    bytes[l] /= node_link ? f.inter_node_bytes_per_s : f.intra_node_bytes_per_s;
    load.transfer_s = std::max(load.transfer_s, bytes[l]);
  }
  if (load.transfer_s <= 0) return load;
  load.uniform = false;
  for (size_t l = 0; l < bytes.size(); l++)
    if (bytes[l] > 0) load.shares.push_back({static_cast<int>(l), bytes[l] / load.transfer_s});
  return load;
}

double LinkClock::issue(const std::vector<std::pair<double, const LinkLoad*>>& calls, double at) {
  double uniform = 0;
  bool any_uniform = false;
  for (const auto& c : calls)
    if (c.second->uniform) {
      uniform += c.first;
      any_uniform = true;
    }
  if (any_uniform) {
    floor_ = std::max(floor_, at) + uniform;
    shift_ += uniform;
  }
  // Every link a rooted call loads starts its share once free (and not before `at`).
  std::vector<std::pair<int, double>> extra;
  for (const auto& c : calls)
    if (!c.second->uniform)
      for (const auto& s : c.second->shares) extra.push_back({s.first, c.first * s.second});
  double end = any_uniform ? all_done() : at;
  for (const auto& e : extra) {
    double& b = busy_[static_cast<size_t>(e.first)];
    const double free = std::max({floor_, b + shift_, at});
    b = free + e.second - shift_;
    top_ = std::max(top_, b);
    end = std::max(end, b + shift_);
  }
  return end;
}

double LinkClock::shared_end(const std::vector<std::pair<double, const LinkLoad*>>& calls,
                             double at) const {
  double uniform = 0;
  for (const auto& c : calls)
    if (c.second->uniform) uniform += c.first;
  std::vector<double> joining(busy_.size(), uniform);
  for (const auto& c : calls)
    if (!c.second->uniform)
      for (const auto& s : c.second->shares)
        joining[static_cast<size_t>(s.first)] += c.first * s.second;
  double end = at;
  for (size_t l = 0; l < busy_.size(); l++) {
    const double left = std::max(0.0, std::max(floor_, busy_[l] + shift_) - at);
    end = std::max(end, at + left + std::min(left, joining[l]));
  }
  return end;
}

}  // namespace zt
