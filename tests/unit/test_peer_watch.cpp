// The peer watch's parts that need no processes: the message frames (against
// the byte layout zero/comm/peer_liveness.h documents, written out here by
// hand), the timeout rule on an injected clock, and the failure record's text.
#include <cstring>
#include <string>
#include <vector>

#include "data/json_reader.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/loop/failure_record.h"
#include "zero/comm/peer_liveness.h"

namespace zt {
namespace {

constexpr int64_t kSecond = 1000000000;

// The documented layout, little-endian, built byte by byte.
std::string frame_by_hand(uint8_t kind, uint32_t rank, uint64_t step, uint32_t micro, uint64_t wall,
                          const std::string& phase, const std::string& engine,
                          const std::vector<uint32_t>& lost) {
  std::string b = "ZTPW";
  b += static_cast<char>(kind);
  b += std::string(3, '\0');
  auto le = [&](uint64_t v, int n) {
    for (int i = 0; i < n; i++) b += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  le(rank, 4);
  le(step, 8);
  le(micro, 4);
  le(wall, 8);
  b += phase + std::string(24 - phase.size(), '\0');
  b += engine + std::string(8 - engine.size(), '\0');
  le(lost.size(), 4);
  for (uint32_t r : lost) le(r, 4);
  return b;
}

WatchMessage heartbeat(int rank, int64_t step, const std::string& phase) {
  WatchMessage m;
  m.rank = rank;
  m.step = step;
  m.phase = phase;
  m.engine_phase = "bwd";
  return m;
}

WatchInstant at(double seconds) {
  return {static_cast<int64_t>(seconds * kSecond),
          1700000000 * kSecond + static_cast<int64_t>(seconds * kSecond)};
}

TEST_CASE("watch messages have the documented byte layout", "[peer_watch]") {
  WatchMessage m;
  m.kind = WatchKind::Leaving;
  m.rank = 3;
  m.step = 0x0102030405060708;
  m.micro = 2;
  m.wall_ns = 1733000000123456789;
  m.phase = "forward_backward";
  m.engine_phase = "bwd";
  m.lost = {1, 7};
  const std::string expected = frame_by_hand(3, 3, 0x0102030405060708, 2, 1733000000123456789,
                                             "forward_backward", "bwd", {1, 7});
  REQUIRE(expected.size() == kWatchHeaderBytes + 8);
  CHECK(encode_watch_message(m) == expected);

  WatchMessage back;
  CHECK(decode_watch_message(expected.data(), expected.size(), &back) == expected.size());
  CHECK(back.kind == WatchKind::Leaving);
  CHECK(back.rank == 3);
  CHECK(back.step == 0x0102030405060708);
  CHECK(back.micro == 2);
  CHECK(back.wall_ns == 1733000000123456789);
  CHECK(back.phase == "forward_backward");
  CHECK(back.engine_phase == "bwd");
  CHECK(back.lost == std::vector<int32_t>{1, 7});
}

TEST_CASE("watch messages: partial frames wait, streams split, garbage is refused",
          "[peer_watch]") {
  const std::string a = encode_watch_message(heartbeat(1, -1, "setup"));
  WatchMessage leaving = heartbeat(2, 9, "zero_step");
  leaving.kind = WatchKind::Leaving;
  leaving.lost = {0};
  const std::string stream = a + encode_watch_message(leaving);
  WatchMessage m;
  for (size_t n = 0; n < a.size(); n++) CHECK(decode_watch_message(stream.data(), n, &m) == 0);
  REQUIRE(decode_watch_message(stream.data(), stream.size(), &m) == kWatchHeaderBytes);
  CHECK(m.step == -1);  // negative steps survive the unsigned encoding
  CHECK(m.phase == "setup");
  // The second frame: its header alone is not enough, its lost rank completes it.
  const char* second = stream.data() + kWatchHeaderBytes;
  CHECK(decode_watch_message(second, kWatchHeaderBytes, &m) == 0);
  REQUIRE(decode_watch_message(second, kWatchHeaderBytes + 4, &m) == kWatchHeaderBytes + 4);
  CHECK(m.kind == WatchKind::Leaving);
  CHECK(m.lost == std::vector<int32_t>{0});

  std::string bad = a;
  bad[0] = 'X';
  require_parts(
      error_of<std::runtime_error>([&] { decode_watch_message(bad.data(), bad.size(), &m); }),
      {"peer watch", "magic"});
  bad = a;
  bad[4] = 9;
  require_parts(
      error_of<std::runtime_error>([&] { decode_watch_message(bad.data(), bad.size(), &m); }),
      {"unknown message kind 9"});
}

TEST_CASE("watch messages cut long phases to their fields", "[peer_watch]") {
  WatchMessage m = heartbeat(0, 1, std::string(40, 'p'));
  m.engine_phase = "abcdefghij";
  const std::string bytes = encode_watch_message(m);
  CHECK(bytes.size() == kWatchHeaderBytes);
  WatchMessage back;
  REQUIRE(decode_watch_message(bytes.data(), bytes.size(), &back) == bytes.size());
  CHECK(back.phase == std::string(23, 'p'));
  CHECK(back.engine_phase == "abcdefg");
}

TEST_CASE("the timeout rule: silent longer than the timeout is lost, no sooner", "[peer_watch]") {
  PeerLiveness live(0, {"a", "b", "c"}, 5 * kSecond, at(0));
  CHECK(live.next_timeout_ns() == 5 * kSecond);
  live.check_timeouts(at(5.0));  // exactly the timeout: not yet
  CHECK(live.lost().empty());
  live.heard(1, heartbeat(1, 3, "data"), at(4.0));
  CHECK(live.next_timeout_ns() == 5 * kSecond);  // rank 2 is still due first
  live.check_timeouts(at(5.001));
  REQUIRE(live.lost().size() == 1);
  const PeerState& c = *live.lost()[0];
  CHECK(c.rank == 2);
  CHECK(c.host == "c");
  CHECK(c.cause == LossCause::HeartbeatTimeout);
  CHECK(c.step == -1);  // never reported a step
  CHECK(c.phase == "setup");
  CHECK(c.last_heartbeat_wall_ns == 0);
  CHECK(c.detected.steady_ns == at(5.001).steady_ns);
  // Rank 1 spoke at 4 s: lost only after 9 s.
  live.check_timeouts(at(9.0));
  CHECK(live.lost().size() == 1);
  live.check_timeouts(at(9.01));
  CHECK(live.lost().size() == 2);
  CHECK(live.peer(1).step == 3);
  CHECK(live.peer(1).phase == "data");
  CHECK(live.peer(1).last_heartbeat_wall_ns == at(4.0).wall_ns);
  CHECK(live.next_timeout_ns() == INT64_MAX);
}

TEST_CASE("the timeout rule: a goodbye makes silence and a close ordinary", "[peer_watch]") {
  PeerLiveness live(1, {"a", "b", "c"}, 2 * kSecond, at(0));
  WatchMessage bye = heartbeat(0, 20, "finish");
  bye.kind = WatchKind::Goodbye;
  live.heard(0, bye, at(1));
  live.closed(0, at(1.1));
  live.heard(2, heartbeat(2, 19, "reduce"), at(1));
  live.closed(2, at(1.2));  // rank 2 closes without a goodbye: a death
  live.check_timeouts(at(100));
  REQUIRE(live.lost().size() == 1);
  const PeerState& p = *live.lost()[0];
  CHECK(p.rank == 2);
  CHECK(p.cause == LossCause::ConnectionClosed);
  CHECK(p.detected.steady_ns == at(1.2).steady_ns);
  CHECK(p.phase == "reduce");
  CHECK(p.step == 19);
}

TEST_CASE("the timeout rule: a Leaving message reports the ranks it names", "[peer_watch]") {
  PeerLiveness live(2, {"a", "b", "c", "d"}, 2 * kSecond, at(0));
  live.heard(1, heartbeat(1, 7, "forward_backward"), at(0.5));
  WatchMessage leaving = heartbeat(0, 7, "reduce");
  leaving.kind = WatchKind::Leaving;
  leaving.lost = {1, 2};  // 2 is this rank: ignored
  live.heard(0, leaving, at(0.6));
  REQUIRE(live.lost().size() == 1);
  CHECK(live.lost()[0]->rank == 1);
  CHECK(live.lost()[0]->cause == LossCause::ReportedByPeer);
  CHECK(live.lost()[0]->reported_by == 0);
  CHECK(live.peer(0).left);
  live.closed(0, at(0.7));        // the sender leaving is not a loss
  live.check_timeouts(at(2.55));  // rank 3 (last heard at 0) is overdue
  REQUIRE(live.lost().size() == 2);
  CHECK(live.lost()[1]->rank == 3);

  // Told of a loss and seeing the close in the same instant: the own evidence names the cause.
  PeerLiveness same(2, {"a", "b", "c"}, 2 * kSecond, at(0));
  same.heard(0, leaving, at(1));
  same.closed(1, at(1));
  CHECK(same.peer(1).cause == LossCause::ConnectionClosed);
  CHECK(same.peer(1).reported_by == -1);
  same.closed(1, at(1.5));  // a later close changes nothing
  CHECK(same.peer(1).detected.steady_ns == at(1).steady_ns);
}

FailureReport sample_report() {
  FailureReport r;
  r.rank = 2;
  r.host = "zt-n1";
  r.step = 7;
  r.micro = 1;
  r.phase = "zero_step";
  r.engine_phase = "step";
  r.detected = at(10.25);
  r.heartbeat_s = 0.1;
  r.failure_timeout_s = 5;
  PeerState p;
  p.rank = 1;
  p.host = "zt-n0";
  p.step = 7;
  p.phase = "forward_backward";
  p.engine_phase = "bwd";
  p.last_heard = at(10.0);
  p.last_heartbeat_wall_ns = at(10.0).wall_ns;
  p.last_heartbeat_sent_wall_ns = at(9.999).wall_ns;
  p.lost = true;
  p.cause = LossCause::ConnectionClosed;
  p.detected = at(10.25);
  r.lost.push_back(p);
  return r;
}

TEST_CASE("failure record: fields, summary line and stderr line", "[peer_watch]") {
  CHECK(shown_phase("forward_backward", "fwd") == "forward");
  CHECK(shown_phase("forward_backward", "bwd") == "backward");
  CHECK(shown_phase("eval", "fwd") == "eval");
  CHECK(failure_record_path("runs/x", 2) == "runs/x/failure/rank_00002.json");

  const FailureReport r = sample_report();
  const JsonValue j = parse_json(failure_record_json(r), "record", JsonDialect::Strict);
  CHECK(j.members.front().key == "summary");
  CHECK(j.find("rank")->number() == 2);
  CHECK(j.find("host")->is_string("zt-n1"));
  CHECK(j.find("phase")->is_string("zero_step"));
  CHECK(j.find("detected_unix_s")->number() == Approx(1700000010.25).epsilon(1e-15));
  const JsonValue& lost = *j.find("lost");
  REQUIRE(lost.items.size() == 1);
  const JsonValue& p = lost.items[0];
  CHECK(p.find("rank")->number() == 1);
  CHECK(p.find("host")->is_string("zt-n0"));
  CHECK(p.find("step")->number() == 7);
  CHECK(p.find("phase")->is_string("backward"));
  CHECK(p.find("trainer_phase")->is_string("forward_backward"));
  CHECK(p.find("cause")->is_string("connection_closed"));
  CHECK(p.find("reported_by")->kind == JsonValue::Kind::null);
  CHECK(p.find("silent_s")->number() == Approx(0.25));
  CHECK(p.find("last_heartbeat_unix_s")->number() == Approx(1700000010.0).epsilon(1e-15));
  CHECK(p.find("last_heartbeat_sent_unix_s")->number() == Approx(1700000009.999).epsilon(1e-15));

  CHECK(j.find("summary")->text ==
        "zerotrain-failure v1 rank=2 host=zt-n1 step=7 phase=zero_step lost=1 lost_hosts=zt-n0 "
        "lost_steps=7 lost_phases=backward causes=connection_closed "
        "detected_unix_s=1700000010.250000 stop_signal=0");
  CHECK(failure_line(r) ==
        "zerotrain: rank 2 (zt-n1): lost rank 1 (zt-n0) at its step 7, phase backward: "
        "connection closed, last heard 0.250 s before");
}

TEST_CASE("failure record: written whole under RUN/failure", "[peer_watch]") {
  TestDir dir;
  const FailureReport r = sample_report();
  write_failure_record(dir.path + "/run", r);
  const std::string text = read_file(dir.path + "/run/failure/rank_00002.json");
  CHECK(text == failure_record_json(r) + "\n");
}

}  // namespace
}  // namespace zt
