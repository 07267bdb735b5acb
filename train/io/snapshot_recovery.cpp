#include "train/io/snapshot_recovery.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "data/shard.h"
#include "train/io/checkpoint.h"
#include "train/io/checkpoint_format.h"
#include "train/io/host_identity.h"
#include "train/io/snapshot_store.h"
#include "train/loop/runtime.h"

namespace zt {
namespace {

// A verified snapshot some rank holds, as every rank learns of it.
struct Held {
  int holder = 0;       // the rank that reads it from its node's store
  int region_rank = 0;  // whose region it is
  int64_t step = 0;
  std::vector<PieceExtent> pieces;
};

// One contiguous part of a destination piece, taken from one held snapshot's piece.
struct Transfer {
  int dest = 0;
  size_t dest_piece = 0;  // index into the destination's current pieces
  size_t held = 0;        // index into the job-wide list of held snapshots
  size_t piece = 0;       // its piece
  uint64_t lo = 0, hi = 0;
};

// The snapshots this rank opened, in the order it announced them.
struct Opened {
  std::shared_ptr<SnapshotRegion> region;
  SnapshotRegion::Slot slot;
};

std::vector<Opened> open_held(const std::string& node_dir, uint32_t model_id,
                              const std::vector<int>& node, int rank,
                              const std::function<void(const std::string&)>& on_reject) {
  std::vector<Opened> out;
  size_t orphan = 0;
  for (const auto& [r, path] : regions_in(node_dir)) {
    const bool runs_here = std::find(node.begin(), node.end(), r) != node.end();
    const int holder = runs_here ? r : node[orphan++ % node.size()];
    if (holder != rank) continue;
    try {
      std::shared_ptr<SnapshotRegion> region = SnapshotRegion::open(path);
      const std::vector<SnapshotRegion::Slot> slots = region->valid_slots(on_reject);
      if (!slots.empty() && region->header().model_id != model_id) {
        on_reject(path + ": a snapshot of another model (model id " +
                  crc32_hex(region->header().model_id) + ", this run's " + crc32_hex(model_id) +
                  ")");
        continue;
      }
      for (const SnapshotRegion::Slot& s : slots) {
        if (s.header.rank != r) {
          on_reject(path + " slot " + std::to_string(s.index) + ": written by rank " +
                    std::to_string(s.header.rank) + ", not rank " + std::to_string(r));
          continue;
        }
        out.push_back({region, s});
      }
    } catch (const DataError& e) {
      on_reject(e.what());
    }
  }
  return out;
}

// Every rank's current pieces and held snapshots, through allgather_u64:
// [pieces, (begin, n)..., snapshots, (step, region rank, pieces, (begin, n)...)...].
void exchange(const std::vector<OptimPiece>& mine, const std::vector<Opened>& held, int world,
              std::vector<std::vector<PieceExtent>>& current, std::vector<Held>& all) {
  std::vector<uint64_t> words{mine.size()};
  for (const OptimPiece& p : mine) words.insert(words.end(), {p.flat_begin, p.n});
  words.push_back(held.size());
  for (const Opened& o : held) {
    words.insert(words.end(),
                 {static_cast<uint64_t>(o.slot.header.step),
                  static_cast<uint64_t>(o.slot.header.rank), o.slot.header.pieces.size()});
    for (const PieceExtent& p : o.slot.header.pieces)
      words.insert(words.end(), {p.flat_begin, p.n});
  }
  const std::vector<uint64_t> lengths = allgather_u64({words.size()});
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  words.resize(longest, 0);
  const std::vector<uint64_t> every = allgather_u64(words);
  current.assign(world, {});
  for (int r = 0; r < world; r++) {
    const uint64_t* w = every.data() + r * longest;
    const uint64_t n = *w++;
    for (uint64_t i = 0; i < n; i++, w += 2) current[r].push_back({w[0], w[1]});
    const uint64_t snaps = *w++;
    for (uint64_t i = 0; i < snaps; i++) {
      Held h;
      h.holder = r;
      h.step = static_cast<int64_t>(*w++);
      h.region_rank = static_cast<int>(*w++);
      const uint64_t pieces = *w++;
      for (uint64_t j = 0; j < pieces; j++, w += 2) h.pieces.push_back({w[0], w[1]});
      all.push_back(std::move(h));
    }
  }
}

// Whether the snapshots of `step` together hold every element of [0, total).
bool covers(const std::vector<Held>& all, int64_t step, uint64_t total) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const Held& h : all)
    if (h.step == step)
      for (const PieceExtent& p : h.pieces) spans.push_back({p.flat_begin, p.flat_begin + p.n});
  std::sort(spans.begin(), spans.end());
  uint64_t at = 0;
  for (const auto& [b, e] : spans) {
    if (b > at) return false;
    at = std::max(at, e);
  }
  return at >= total;
}

// Each destination piece from the held snapshots of `step`: the destination's
// own holdings first, then the other holders in rank order starting after it
// (so that the destinations of a lost region spread over its replicas).
std::vector<Transfer> plan_transfers(const std::vector<std::vector<PieceExtent>>& current,
                                     const std::vector<Held>& all, int64_t step) {
  const int world = static_cast<int>(current.size());
  std::vector<Transfer> out;
  for (int d = 0; d < world; d++) {
    std::vector<size_t> order;
    for (size_t i = 0; i < all.size(); i++)
      if (all[i].step == step) order.push_back(i);
    auto distance = [&](size_t i) {
      const int h = all[i].holder;
      return std::make_pair((h - d + world) % world, all[i].region_rank == d ? 0 : 1);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return distance(a) < distance(b); });
    for (size_t dp = 0; dp < current[d].size(); dp++) {
      const PieceExtent& want = current[d][dp];
      std::vector<std::pair<uint64_t, uint64_t>> open{{want.flat_begin, want.flat_begin + want.n}};
      for (size_t i : order) {
        for (size_t j = 0; j < all[i].pieces.size() && !open.empty(); j++) {
          const uint64_t pb = all[i].pieces[j].flat_begin, pe = pb + all[i].pieces[j].n;
          std::vector<std::pair<uint64_t, uint64_t>> left;
          for (const auto& [b, e] : open) {
            const uint64_t lo = std::max(b, pb), hi = std::min(e, pe);
            if (lo >= hi) {
              left.push_back({b, e});
              continue;
            }
            out.push_back({d, dp, i, j, lo, hi});
            if (b < lo) left.push_back({b, lo});
            if (hi < e) left.push_back({hi, e});
          }
          open = std::move(left);
        }
      }
    }
  }
  return out;
}

std::string describe_origins(const std::vector<Transfer>& plan, const std::vector<Held>& all,
                             int dest) {
  std::map<std::string, uint64_t> by_source;
  std::vector<std::string> order;
  for (const Transfer& t : plan) {
    if (t.dest != dest) continue;
    const Held& h = all[t.held];
    const std::string what =
        h.holder != dest ? "rank " + std::to_string(h.holder) + " over the communicator"
        : h.region_rank == dest
            ? "own store"
            : "own node's store (rank " + std::to_string(h.region_rank) + "'s region)";
    if (!by_source.count(what)) order.push_back(what);
    by_source[what] += t.hi - t.lo;
  }
  std::string out;
  for (const std::string& what : order)
    out += (out.empty() ? "" : ", ") + what + " (" + std::to_string(by_source[what]) + " elements)";
  return out.empty() ? "nothing (it owns no parameters)" : out;
}

}  // namespace

std::vector<int> ranks_on_this_node(int rank, int world) {
  const std::string host = host_name();
  const std::vector<uint64_t> hosts = allgather_u64({crc32_of(host.data(), host.size())});
  std::vector<int> out;
  for (int r = 0; r < world; r++)
    if (hosts[r] == hosts[rank]) out.push_back(r);
  return out;
}

SnapshotRecovery recover_from_snapshots(const std::string& node_dir, uint32_t model_id,
                                        uint64_t total, const std::vector<WholeRun>& part,
                                        int64_t max_step, ZeroEngine& engine, Communicator& comm,
                                        const std::function<void(const std::string&)>& on_reject) {
  const int rank = comm.rank(), world = comm.world();
  const std::vector<int> node = ranks_on_this_node(rank, world);
  const std::vector<Opened> held = open_held(node_dir, model_id, node, rank, on_reject);
  ShardOptimizer& opt = engine.optimizer();
  const std::vector<OptimPiece> pieces = whole_model_pieces(opt.pieces(), part);
  std::vector<std::vector<PieceExtent>> current;
  std::vector<Held> all;
  exchange(pieces, held, world, current, all);

  SnapshotRecovery result;
  std::vector<int64_t> steps;
  for (const Held& h : all) steps.push_back(h.step);
  std::sort(steps.rbegin(), steps.rend());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  for (int64_t s : steps)
    if (s <= max_step && covers(all, s, total)) {
      result.step = s;
      break;
    }
  if (result.step < 0) {
    result.newest_seen = steps.empty() ? "no snapshot that verifies"
                                       : "snapshots of step " + std::to_string(steps.front()) +
                                             " and older, none whose ranks together hold all " +
                                             std::to_string(total) + " parameters";
    return result;
  }
  const std::vector<Transfer> plan = plan_transfers(current, all, result.step);
  for (int d = 0; d < world; d++) result.origins.push_back(describe_origins(plan, all, d));

  // This rank's snapshots by job-wide index (the exchange numbered them holder by holder).
  size_t first_mine = 0;
  while (first_mine < all.size() && all[first_mine].holder != rank) first_mine++;
  auto source = [&](const Transfer& t, int k) {
    const Opened& o = held[t.held - first_mine];
    return o.region->piece_data(o.slot, t.piece, k) +
           (t.lo - o.slot.header.pieces[t.piece].flat_begin);
  };
  std::vector<float> state[3];
  for (std::vector<float>& s : state) s.assign(opt.shard_size(), 0.0f);
  auto target = [&](const Transfer& t, int k) {
    const OptimPiece& p = pieces[t.dest_piece];
    return state[k].data() + p.shard_offset + (t.lo - p.flat_begin);
  };
  // One message per (holder, destination) pair, each transfer's master, m and v in plan order.
  std::map<int, std::vector<float>> outgoing, incoming;
  for (const Transfer& t : plan) {
    const int holder = all[t.held].holder;
    const size_t n = t.hi - t.lo;
    if (holder == rank && t.dest == rank)
      for (int k = 0; k < 3; k++) std::memcpy(target(t, k), source(t, k), n * sizeof(float));
    else if (holder == rank) {
      std::vector<float>& buf = outgoing[t.dest];
      for (int k = 0; k < 3; k++) buf.insert(buf.end(), source(t, k), source(t, k) + n);
    } else if (t.dest == rank) incoming[holder].resize(incoming[holder].size() + 3 * n);
  }
  std::vector<Handle> pending;
  for (auto& [peer, buf] : incoming)
    pending.push_back(comm.recv(buf.data(), buf.size(), DType::F32, peer, 0));
  for (auto& [peer, buf] : outgoing)
    pending.push_back(comm.send(buf.data(), buf.size(), DType::F32, peer, 0));
  for (Handle& h : pending) h->wait();
  std::map<int, size_t> read_at;
  for (const Transfer& t : plan) {
    const int holder = all[t.held].holder;
    if (t.dest != rank || holder == rank) continue;
    const size_t n = t.hi - t.lo;
    const float* in = incoming[holder].data() + read_at[holder];
    for (int k = 0; k < 3; k++) std::memcpy(target(t, k), in + k * n, n * sizeof(float));
    read_at[holder] += 3 * n;
    result.bytes_received += 3 * n * sizeof(float);
  }
  opt.load_state(state[0], state[1], state[2]);
  engine.refresh_params_from_master();
  return result;
}

}  // namespace zt
