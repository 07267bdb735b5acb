// The peer watch's rules without sockets or threads (zero/comm/peer_watch.h
// runs them): the messages ranks send each other, and which peers count as
// lost at a given moment. Times are passed in, so tests drive the clock.
//
// Messages are length-free frames of a fixed 68-byte header, little-endian,
// followed (for Leaving) by the lost ranks as int32:
//   magic "ZTPW", kind, 3 zero bytes, rank (i32), step (i64), micro (i32),
//   sender's CLOCK_REALTIME (i64 ns), phase (24 bytes, NUL-padded),
//   engine phase (8 bytes, NUL-padded), count of lost ranks (u32).
// Heartbeat: "I am alive at this step and phase". Goodbye: "I finished; my
// connection closing is not a failure". Leaving: "I detected that these ranks
// were lost and am taking the job down".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

enum class WatchKind : uint8_t { Heartbeat = 1, Goodbye = 2, Leaving = 3 };

struct WatchMessage {
  WatchKind kind = WatchKind::Heartbeat;
  int32_t rank = 0;
  int64_t step = -1;
  int32_t micro = 0;
  int64_t wall_ns = 0;        // sender's CLOCK_REALTIME when sent
  std::string phase;          // at most 23 characters are sent
  std::string engine_phase;   // at most 7
  std::vector<int32_t> lost;  // Leaving only
};

constexpr size_t kWatchHeaderBytes = 68;
std::string encode_watch_message(const WatchMessage& m);
// Decodes the message at the front of data[0, n): the bytes it took, or 0 when
// n does not hold all of it yet. Throws std::runtime_error (one line) on a
// frame that is not a watch message (wrong magic or kind, an absurd count).
size_t decode_watch_message(const char* data, size_t n, WatchMessage* out);

// A moment on both clocks: steady for the timeout rule, real time for records.
struct WatchInstant {
  int64_t steady_ns = 0;
  int64_t wall_ns = 0;
};

enum class LossCause { ConnectionClosed, HeartbeatTimeout, ReportedByPeer };
const char* loss_cause_name(LossCause c);  // "connection_closed", ...

// What this rank knows of one peer.
struct PeerState {
  int rank = 0;
  std::string host;
  int64_t step = -1;  // last reported; -1 before its first heartbeat
  int32_t micro = 0;
  std::string phase = "setup", engine_phase;  // as a rank starts
  WatchInstant last_heard;                    // last message (or the connection's start)
  int64_t last_heartbeat_wall_ns = 0;         // this rank's real time when it arrived; 0: none yet
  int64_t last_heartbeat_sent_wall_ns = 0;    // the peer's own stamp on it
  bool finished = false;                      // said goodbye
  bool left = false;                          // sent Leaving: it detected a failure itself
  bool lost = false;
  LossCause cause = LossCause::ConnectionClosed;
  int reported_by = -1;  // ReportedByPeer: which rank told us
  WatchInstant detected;
};

// The timeout rule: a peer that said goodbye or left is never lost; one whose
// connection closed is lost at once; one not heard from for longer than
// `timeout_ns` is lost by timeout; one that a Leaving message names is lost as
// reported by its sender. A rank named lost in a Leaving message about itself
// ignores it (it is the failed one, not a survivor).
class PeerLiveness {
 public:
  PeerLiveness(int self, const std::vector<std::string>& hosts, int64_t timeout_ns,
               WatchInstant now);
  void heard(int peer, const WatchMessage& m, WatchInstant now);
  void closed(int peer, WatchInstant now);
  void check_timeouts(WatchInstant now);
  // When the next peer times out if nothing arrives (steady ns); INT64_MAX: none watched.
  int64_t next_timeout_ns() const;
  // Peers lost so far, in rank order.
  std::vector<const PeerState*> lost() const;
  const PeerState& peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }
  int self() const { return self_; }

 private:
  void mark_lost(PeerState& p, LossCause why, WatchInstant now, int reported_by);
  int self_;
  int64_t timeout_ns_;
  std::vector<PeerState> peers_;  // indexed by rank; peers_[self_] unused
};

}  // namespace zt
