#include "zero/analysis/link_load.h"

#include "zero/analysis/step_time_model.h"

namespace zt {

int link_count(const NodeMap& nodes, int world) { return 2 * nodes.nodes() + world; }

LinkLoad call_link_load(const PlannedCall& c, int world, const NodeMap& nodes, const LinkFigures& f,
                        bool open_mpi) {
  LinkLoad load;
  const int W = c.group.size > 0 ? c.group.size : world;
  if (c.primitive != Primitive::Reduce || W != world || world <= 1 || c.root < 0) return load;
  const double n = static_cast<double>(payload_bytes(c.primitive, c.count, c.dtype, W));
  const bool tree = open_mpi && (world > 4 || n < 65536);
  const int N = nodes.nodes();
  std::vector<double> bytes(static_cast<size_t>(link_count(nodes, world)), 0);
  // libnbc's vrank: the root and rank 0 swap places; the map is its own inverse.
  auto swap = [&](int r) { return r == 0 ? c.root : r == c.root ? 0 : r; };
  for (int v = 1; v < world; v++) {
    const int src = swap(v), dst = swap(tree ? (v & (v - 1)) : v - 1);
    const int a = nodes.node_of[static_cast<size_t>(src)];
    const int b = nodes.node_of[static_cast<size_t>(dst)];
    if (a != b) {
      bytes[static_cast<size_t>(a)] += n;
      bytes[static_cast<size_t>(N + b)] += n;
    } else {
      bytes[static_cast<size_t>(2 * N + src)] += n;
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
