#include "zero/comm/comm_stats.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace zt {

const char* primitive_name(Primitive p) {
  static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "reduce",
                                "broadcast",  "all_to_all",     "send",       "recv"};
  return names[static_cast<int>(p)];
}

const char* purpose_name(Purpose p) {
  static const char* names[] = {"gradients", "parameters", "scalars", "activations"};
  return names[static_cast<int>(p)];
}

const char* dimension_name(Dimension d) {
  static const char* names[] = {"data", "tensor", "pipeline"};
  return names[static_cast<int>(d)];
}

const char* phase_name(Phase p) {
  static const char* names[] = {"fwd", "bwd", "step", "init"};
  return names[static_cast<int>(p)];
}

double bus_factor(Primitive p, int W) {
  switch (p) {
    case Primitive::AllReduce: return 2.0 * (W - 1) / W;
    case Primitive::ReduceScatter:
    case Primitive::AllGather:
    case Primitive::AllToAll: return static_cast<double>(W - 1) / W;
    case Primitive::Recv: return 0.0;  // the sender counts the message's bus bytes
    default: return 1.0;
  }
}

uint64_t payload_bytes(Primitive p, size_t count, DType t, int W) {
  const uint64_t b = static_cast<uint64_t>(count) * dtype_size(t);
  return (p == Primitive::ReduceScatter || p == Primitive::AllGather || p == Primitive::AllToAll)
             ? b * W
             : b;
}

std::vector<int> RankGroup::members_of(int rank) const {
  const int base = rank / (size * stride) * (size * stride) + rank % stride;
  std::vector<int> out;
  for (int k = 0; k < size; k++) out.push_back(base + k * stride);
  return out;
}

int NodeMap::nodes() const {
  if (nodes_ > 0) return nodes_;
  int n = 0;
  for (int x : node_of) n = std::max(n, x + 1);
  nodes_ = std::max(n, 1);
  return nodes_;
}

int NodeMap::ranks_per_node() const {
  if (ranks_per_node_ > 0) return ranks_per_node_;
  std::vector<int> count(nodes(), 0);
  for (int x : node_of) count[x]++;
  ranks_per_node_ = node_of.empty() ? 1 : *std::max_element(count.begin(), count.end());
  return ranks_per_node_;
}

bool NodeMap::sends_across(int rank) const {
  const int W = static_cast<int>(node_of.size());
  return W > 1 && node_of[rank] != node_of[(rank + 1) % W];
}

double NodeMap::inter_node_share(Primitive p, int rank) const {
  const int W = static_cast<int>(node_of.size());
  if (W < 2) return 0;
  if (p != Primitive::AllToAll) return sends_across(rank) ? 1.0 : 0.0;
  int across = 0;
  for (int r = 0; r < W; r++) across += node_of[r] != node_of[rank];
  return static_cast<double>(across) / (W - 1);
}

NodeMap NodeMap::of_members(const std::vector<int>& members) const {
  NodeMap m;
  for (int r : members) m.node_of.push_back(r < static_cast<int>(node_of.size()) ? node_of[r] : 0);
  return m;
}

double NodeMap::group_inter_node_share(Primitive p, const RankGroup& g) const {
  const int W = static_cast<int>(node_of.size());
  if (W == 0 || g.size < 2) return 0;
  const auto key = std::make_tuple(p == Primitive::AllToAll, g.size, g.stride, W);
  auto cached = share_cache_.find(key);
  if (cached != share_cache_.end()) return cached->second;
  const int block = g.size * g.stride;
  double sum = 0;
  if (p != Primitive::AllToAll) {
    for (int r = 0; r < W; r++) {
      const int base = r / block * block + r % g.stride;
      const int next = base + ((g.index_of(r) + 1) % g.size) * g.stride;
      sum += node_of[next] != node_of[r];
    }
  } else {
    // Each group's members' nodes sorted once, so that a rank's peers on its
    // own node are counted by a binary search: O(W log W), where asking every
    // peer of every rank took O(W x group size) (W^2 for a world-wide group).
    std::vector<int> across(W, 0), group_nodes(g.size);
    for (int first = 0; first < W; first += block)
      for (int base = first; base < first + g.stride && base < W; base++) {
        for (int k = 0; k < g.size; k++) group_nodes[k] = node_of[base + k * g.stride];
        std::sort(group_nodes.begin(), group_nodes.end());
        for (int k = 0; k < g.size; k++) {
          const int r = base + k * g.stride;
          const auto same = std::equal_range(group_nodes.begin(), group_nodes.end(), node_of[r]);
          across[r] = g.size - static_cast<int>(same.second - same.first);
        }
      }
    for (int r = 0; r < W; r++) sum += static_cast<double>(across[r]) / (g.size - 1);
  }
  share_cache_.emplace(key, sum / W);
  return sum / W;
}

NodeMap NodeMap::uniform(int world, int g) {
  NodeMap m;
  for (int r = 0; r < world; r++) m.node_of.push_back(r / std::max(1, g));
  return m;
}

namespace {

PrimitiveStats minus(const PrimitiveStats& a, const PrimitiveStats& b) {
  return {a.calls - b.calls, a.bytes - b.bytes, a.bus_bytes - b.bus_bytes,
          a.inter_node_bus_bytes - b.inter_node_bus_bytes, a.seconds - b.seconds};
}

}  // namespace

CommStats CommStats::minus(const CommStats& e) const {
  CommStats d;
  for (size_t i = 0; i < by_primitive.size(); i++) {
    d.by_primitive[i] = zt::minus(by_primitive[i], e.by_primitive[i]);
    for (size_t u = 0; u < by_purpose.size(); u++)
      d.by_purpose[u][i] = zt::minus(by_purpose[u][i], e.by_purpose[u][i]);
    for (size_t u = 0; u < by_dimension.size(); u++)
      d.by_dimension[u][i] = zt::minus(by_dimension[u][i], e.by_dimension[u][i]);
  }
  d.exposed_seconds = exposed_seconds - e.exposed_seconds;
  return d;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Completes the primitive's timing when the caller first observes completion.
class TimedHandle : public CommHandle {
 public:
  TimedHandle(Handle inner, Clock::time_point t0, double* seconds, double* exposed)
      : inner_(std::move(inner)), t0_(t0), seconds_(seconds), exposed_(exposed) {}
  void wait() override {
    if (finished_) return;
    auto w0 = Clock::now();
    inner_->wait();
    *exposed_ += since(w0);
    finish();
  }
  bool done() override {
    if (!finished_ && inner_->done()) finish();
    return finished_;
  }

 private:
  void finish() {
    finished_ = true;
    *seconds_ += since(t0_);
  }
  Handle inner_;
  Clock::time_point t0_;
  double* seconds_;
  double* exposed_;
  bool finished_ = false;
};

}  // namespace

CountingCommunicator::CountingCommunicator(std::unique_ptr<Communicator> inner)
    : inner_(std::move(inner)), group_{inner_->world(), 1}, world_rank_(inner_->rank()) {}

CountingCommunicator::CountingCommunicator(std::unique_ptr<Communicator> inner,
                                           CountingCommunicator* root, const RankGroup& g,
                                           Dimension d)
    : inner_(std::move(inner)), root_(root), group_(g), dimension_(d), world_rank_(root->rank()) {
  nodes_ = root->nodes_.of_members(g.members_of(world_rank_));
}

std::unique_ptr<CountingCommunicator> CountingCommunicator::counted_subgroup(const RankGroup& g,
                                                                             Dimension d) {
  if (root_ != this) throw std::logic_error("comm: subgroups are made from the world communicator");
  if (g.size < 1 || g.stride < 1 || world() % (g.size * g.stride) != 0)
    throw std::logic_error("comm: a group of " + std::to_string(g.size) + " ranks " +
                           std::to_string(g.stride) + " apart does not tile " +
                           std::to_string(world()) + " ranks");
  std::unique_ptr<Communicator> inner = inner_->subgroup(g.members_of(rank()));
  return std::unique_ptr<CountingCommunicator>(
      new CountingCommunicator(std::move(inner), this, g, d));
}

std::unique_ptr<Communicator> CountingCommunicator::subgroup(const std::vector<int>& members) {
  const int size = static_cast<int>(members.size());
  const RankGroup g{size, size > 1 ? members[1] - members[0] : 1};
  if (g.members_of(rank()) != members)
    throw std::logic_error("comm: subgroup members are not a group of equally spaced ranks");
  if (root_ == this) return counted_subgroup(g);
  // A group inside a grid dimension's group (hpZ's, qgZ's or MiCS's inside the
  // data-parallel group): the same ranks named in the world, where they must
  // again be equally spaced; the calls count along this group's dimension.
  const RankGroup in_world{g.size, g.stride * group_.stride};
  const std::vector<int> mine = group_.members_of(world_rank_);
  std::vector<int> world_members;
  for (int m : members) world_members.push_back(mine[static_cast<size_t>(m)]);
  if (in_world.members_of(world_rank_) != world_members)
    throw std::logic_error("comm: a subgroup of a " + std::string(dimension_name(dimension_)) +
                           " group that is no group of equally spaced world ranks");
  return std::unique_ptr<Communicator>(
      new CountingCommunicator(inner_->subgroup(members), root_, in_world, dimension_));
}

CountingCommunicator::~CountingCommunicator() {
  if (trace_ && root_ == this) std::fclose(trace_);
}

void CountingCommunicator::open_trace(const std::string& path) {
  trace_ = std::fopen(path.c_str(), "w");
  if (!trace_) throw std::runtime_error(path + ": cannot open the comm trace for writing");
  std::fputs(held_trace_.c_str(), trace_);
  held_trace_.clear();
  held_trace_.shrink_to_fit();
  holding_trace_ = false;
}

Handle CountingCommunicator::record(Primitive p, size_t count, DType t, int root, Handle h) {
  const double across =
      static_cast<int>(nodes_.node_of.size()) == world() ? nodes_.inter_node_share(p, rank()) : 0.0;
  // Tensor and pipeline calls move activations whatever ZeRO last announced.
  const Purpose purpose = dimension_ == Dimension::Data ? root_->purpose_ : next_purpose_;
  next_purpose_ = Purpose::Activations;
  return account(p, count, t, root, purpose, across, std::move(h));
}

Handle CountingCommunicator::account(Primitive p, size_t count, DType t, int root, Purpose purpose,
                                     double across, Handle h) {
  CountingCommunicator& r = *root_;
  const uint64_t bytes = payload_bytes(p, count, t, world());
  const double bus = bytes * bus_factor(p, world());
  for (PrimitiveStats* s :
       {&r.stats_[p], &r.stats_.by_purpose[static_cast<int>(purpose)][static_cast<int>(p)],
        &r.stats_.by_dimension[static_cast<int>(dimension_)][static_cast<int>(p)]}) {
    s->calls++;
    s->bytes += bytes;
    s->bus_bytes += bus;
    s->inter_node_bus_bytes += bus * across;
  }
  if (r.keep_log_)
    r.log_.push_back({r.step_, r.phase_, purpose, r.micro_, p, t, count, root, group_, dimension_});
  if (r.trace_ || r.holding_trace_) {
    char line[416];
    std::snprintf(line, sizeof line,
                  "{\"step\":%lld,\"phase\":\"%s\",\"micro\":%d,\"rank\":%d,\"op\":\"%s\","
                  "\"count\":%zu,\"dtype\":\"%s\",\"bytes\":%llu,\"root\":%d,\"purpose\":\"%s\","
                  "\"group\":[%d,%d],\"dim\":\"%s\"}\n",
                  static_cast<long long>(r.step_), phase_name(r.phase_), r.micro_, world_rank_,
                  primitive_name(p), count, dtype_name(t), static_cast<unsigned long long>(bytes),
                  root, purpose_name(purpose), group_.size, group_.stride,
                  dimension_name(dimension_));
    if (r.trace_) std::fputs(line, r.trace_);
    else r.held_trace_ += line;
  }
  return h;
}

#define ZT_TIMED(prim, count, t, root, call)                                             \
  do {                                                                                   \
    auto t0 = Clock::now();                                                              \
    Handle h = call;                                                                     \
    return record(prim, count, t, root,                                                  \
                  Handle(new TimedHandle(std::move(h), t0, &root_->stats_[prim].seconds, \
                                         &root_->stats_.exposed_seconds)));              \
  } while (0)

Handle CountingCommunicator::all_reduce(void* buf, size_t n, DType t) {
  ZT_TIMED(Primitive::AllReduce, n, t, -1, inner_->all_reduce(buf, n, t));
}
Handle CountingCommunicator::reduce_scatter(const void* send, void* recv, size_t n, DType t) {
  ZT_TIMED(Primitive::ReduceScatter, n, t, -1, inner_->reduce_scatter(send, recv, n, t));
}
Handle CountingCommunicator::all_gather(const void* send, void* recv, size_t n, DType t) {
  ZT_TIMED(Primitive::AllGather, n, t, -1, inner_->all_gather(send, recv, n, t));
}
Handle CountingCommunicator::reduce(const void* send, void* recv, size_t n, DType t, int root) {
  ZT_TIMED(Primitive::Reduce, n, t, root, inner_->reduce(send, recv, n, t, root));
}
Handle CountingCommunicator::broadcast(void* buf, size_t n, DType t, int root) {
  ZT_TIMED(Primitive::Broadcast, n, t, root, inner_->broadcast(buf, n, t, root));
}
Handle CountingCommunicator::all_to_all(const void* send, void* recv, size_t n, DType t) {
  ZT_TIMED(Primitive::AllToAll, n, t, -1, inner_->all_to_all(send, recv, n, t));
}

// The message crosses nodes when the peer is on another node than this rank.
Handle CountingCommunicator::send_counted(const void* buf, size_t n, DType t, int peer, int tag,
                                          Purpose purpose) {
  const auto t0 = Clock::now();
  Handle h(new TimedHandle(inner_->send(buf, n, t, peer, tag), t0,
                           &root_->stats_[Primitive::Send].seconds,
                           &root_->stats_.exposed_seconds));
  const bool across = static_cast<int>(nodes_.node_of.size()) == world() &&
                      nodes_.node_of[rank()] != nodes_.node_of[peer];
  return account(Primitive::Send, n, t, peer, purpose, across ? 1.0 : 0.0, std::move(h));
}

Handle CountingCommunicator::recv_counted(void* buf, size_t n, DType t, int peer, int tag,
                                          Purpose purpose) {
  const auto t0 = Clock::now();
  Handle h(new TimedHandle(inner_->recv(buf, n, t, peer, tag), t0,
                           &root_->stats_[Primitive::Recv].seconds,
                           &root_->stats_.exposed_seconds));
  return account(Primitive::Recv, n, t, peer, purpose, 0.0, std::move(h));
}

}  // namespace zt
