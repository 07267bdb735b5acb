#include "zero/comm/peer_liveness.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace zt {
namespace {

constexpr char kMagic[4] = {'Z', 'T', 'P', 'W'};
constexpr size_t kPhaseBytes = 24, kEnginePhaseBytes = 8;
// A Leaving message names lost ranks; more than this is not a watch message.
constexpr uint32_t kMaxLost = 1u << 20;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
void put_text(std::string& out, const std::string& s, size_t bytes) {
  const std::string cut = s.substr(0, bytes - 1);
  out += cut;
  out.append(bytes - cut.size(), '\0');
}
std::string get_text(const char* p, size_t bytes) {
  size_t n = 0;
  while (n < bytes && p[n] != '\0') n++;
  return std::string(p, n);
}

}  // namespace

std::string encode_watch_message(const WatchMessage& m) {
  std::string out(kMagic, sizeof kMagic);
  put(out, static_cast<uint8_t>(m.kind), 1);
  put(out, 0, 3);
  put(out, static_cast<uint32_t>(m.rank), 4);
  put(out, static_cast<uint64_t>(m.step), 8);
  put(out, static_cast<uint32_t>(m.micro), 4);
  put(out, static_cast<uint64_t>(m.wall_ns), 8);
  put_text(out, m.phase, kPhaseBytes);
  put_text(out, m.engine_phase, kEnginePhaseBytes);
  put(out, static_cast<uint32_t>(m.lost.size()), 4);
  for (int32_t r : m.lost) put(out, static_cast<uint32_t>(r), 4);
  return out;
}

size_t decode_watch_message(const char* data, size_t n, WatchMessage* out) {
  if (n < kWatchHeaderBytes) return 0;
  if (std::string(data, 4) != std::string(kMagic, 4))
    throw std::runtime_error("peer watch: a message without the ZTPW magic");
  const uint64_t kind = get(data + 4, 1);
  if (kind < 1 || kind > 3)
    throw std::runtime_error("peer watch: unknown message kind " + std::to_string(kind));
  const uint32_t count = static_cast<uint32_t>(get(data + 64, 4));
  if (count > kMaxLost)
    throw std::runtime_error("peer watch: a message naming " + std::to_string(count) +
                             " lost ranks");
  const size_t total = kWatchHeaderBytes + size_t(count) * 4;
  if (n < total) return 0;
  WatchMessage m;
  m.kind = static_cast<WatchKind>(kind);
  m.rank = static_cast<int32_t>(get(data + 8, 4));
  m.step = static_cast<int64_t>(get(data + 12, 8));
  m.micro = static_cast<int32_t>(get(data + 20, 4));
  m.wall_ns = static_cast<int64_t>(get(data + 24, 8));
  m.phase = get_text(data + 32, kPhaseBytes);
  m.engine_phase = get_text(data + 56, kEnginePhaseBytes);
  for (uint32_t i = 0; i < count; i++)
    m.lost.push_back(static_cast<int32_t>(get(data + kWatchHeaderBytes + 4 * i, 4)));
  *out = m;
  return total;
}

const char* loss_cause_name(LossCause c) {
  switch (c) {
    case LossCause::ConnectionClosed: return "connection_closed";
    case LossCause::HeartbeatTimeout: return "heartbeat_timeout";
    case LossCause::ReportedByPeer: return "reported_by_peer";
  }
  return "?";
}

PeerLiveness::PeerLiveness(int self, const std::vector<std::string>& hosts, int64_t timeout_ns,
                           WatchInstant now)
    : self_(self), timeout_ns_(timeout_ns), peers_(hosts.size()) {
  for (size_t r = 0; r < hosts.size(); r++) {
    peers_[r].rank = static_cast<int>(r);
    peers_[r].host = hosts[r];
    peers_[r].last_heard = now;
  }
}

void PeerLiveness::heard(int peer, const WatchMessage& m, WatchInstant now) {
  PeerState& p = peers_.at(static_cast<size_t>(peer));
  if (p.lost) return;
  p.last_heard = now;
  p.step = m.step;
  p.micro = m.micro;
  p.phase = m.phase;
  p.engine_phase = m.engine_phase;
  if (m.kind == WatchKind::Heartbeat) {
    p.last_heartbeat_wall_ns = now.wall_ns;
    p.last_heartbeat_sent_wall_ns = m.wall_ns;
  } else if (m.kind == WatchKind::Goodbye) {
    p.finished = true;
  } else {
    p.left = true;
    for (int32_t r : m.lost) {
      if (r == self_ || r < 0 || static_cast<size_t>(r) >= peers_.size()) continue;
      PeerState& q = peers_[static_cast<size_t>(r)];
      if (!q.finished && !q.left) mark_lost(q, LossCause::ReportedByPeer, now, peer);
    }
  }
}

void PeerLiveness::closed(int peer, WatchInstant now) {
  PeerState& p = peers_.at(static_cast<size_t>(peer));
  // Told of the loss and seen it close in the same instant: our own evidence counts.
  if (p.lost && p.cause == LossCause::ReportedByPeer && p.detected.steady_ns == now.steady_ns) {
    p.cause = LossCause::ConnectionClosed;
    p.reported_by = -1;
  }
  if (!p.finished && !p.left) mark_lost(p, LossCause::ConnectionClosed, now, -1);
}

void PeerLiveness::check_timeouts(WatchInstant now) {
  for (PeerState& p : peers_)
    if (p.rank != self_ && !p.finished && !p.left &&
        now.steady_ns - p.last_heard.steady_ns > timeout_ns_)
      mark_lost(p, LossCause::HeartbeatTimeout, now, -1);
}

int64_t PeerLiveness::next_timeout_ns() const {
  int64_t next = INT64_MAX;
  for (const PeerState& p : peers_)
    if (p.rank != self_ && !p.finished && !p.left && !p.lost)
      next = std::min(next, p.last_heard.steady_ns + timeout_ns_);
  return next;
}

std::vector<const PeerState*> PeerLiveness::lost() const {
  std::vector<const PeerState*> out;
  for (const PeerState& p : peers_)
    if (p.lost) out.push_back(&p);
  return out;
}

void PeerLiveness::mark_lost(PeerState& p, LossCause why, WatchInstant now, int reported_by) {
  if (p.lost) return;
  p.lost = true;
  p.cause = why;
  p.reported_by = reported_by;
  p.detected = now;
}

}  // namespace zt
