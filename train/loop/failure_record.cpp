#include "train/loop/failure_record.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "train/io/atomic_file.h"
#include "train/io/json_writer.h"

namespace zt {
namespace {

double unix_seconds(int64_t wall_ns) { return wall_ns / 1e9; }

// Seconds from the peer's last message to the detection, on the steady clock.
double silent_seconds(const PeerState& p) {
  return (p.detected.steady_ns - p.last_heard.steady_ns) / 1e9;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

JsonObject lost_json(const PeerState& p) {
  JsonObject o;
  o.add("rank", p.rank)
      .add("host", p.host)
      .add("step", p.step)
      .add("micro", static_cast<int>(p.micro))
      .add("phase", shown_phase(p.phase, p.engine_phase))
      .add("trainer_phase", p.phase)
      .add("engine_phase", p.engine_phase)
      .add("cause", loss_cause_name(p.cause));
  if (p.reported_by >= 0) o.add("reported_by", p.reported_by);
  else o.raw("reported_by", "null");
  if (p.last_heartbeat_wall_ns > 0)
    o.add("last_heartbeat_unix_s", unix_seconds(p.last_heartbeat_wall_ns))
        .add("last_heartbeat_sent_unix_s", unix_seconds(p.last_heartbeat_sent_wall_ns));
  else o.raw("last_heartbeat_unix_s", "null").raw("last_heartbeat_sent_unix_s", "null");
  return o.add("silent_s", silent_seconds(p))
      .add("detected_unix_s", unix_seconds(p.detected.wall_ns));
}

std::string summary_line(const FailureReport& r) {
  std::string ranks, hosts, steps, phases, causes;
  for (const PeerState& p : r.lost) {
    const char* sep = ranks.empty() ? "" : ",";
    ranks += sep + std::to_string(p.rank);
    hosts += sep + p.host;
    steps += sep + std::to_string(p.step);
    phases += sep + shown_phase(p.phase, p.engine_phase);
    causes += sep + std::string(loss_cause_name(p.cause));
  }
  char detected[40];
  std::snprintf(detected, sizeof detected, "%.6f", unix_seconds(r.detected.wall_ns));
  return "zerotrain-failure v1 rank=" + std::to_string(r.rank) + " host=" + r.host +
         " step=" + std::to_string(r.step) + " phase=" + shown_phase(r.phase, r.engine_phase) +
         " lost=" + ranks + " lost_hosts=" + hosts + " lost_steps=" + steps +
         " lost_phases=" + phases + " causes=" + causes + " detected_unix_s=" + detected +
         " stop_signal=" + std::to_string(r.stop_signal);
}

}  // namespace

std::string shown_phase(const std::string& trainer_phase, const std::string& engine_phase) {
  if (trainer_phase == "forward_backward") {
    if (engine_phase == "fwd") return "forward";
    if (engine_phase == "bwd") return "backward";
  }
  return trainer_phase;
}

std::string failure_record_json(const FailureReport& r) {
  std::string lost = "[";
  for (const PeerState& p : r.lost) lost += (lost.size() > 1 ? "," : "") + lost_json(p).str();
  lost += "]";
  JsonObject o;
  o.add("summary", summary_line(r))
      .add("rank", r.rank)
      .add("host", r.host)
      .add("step", r.step)
      .add("micro", static_cast<int>(r.micro))
      .add("phase", shown_phase(r.phase, r.engine_phase))
      .add("trainer_phase", r.phase)
      .add("engine_phase", r.engine_phase)
      .raw("lost", lost)
      .add("detected_unix_s", unix_seconds(r.detected.wall_ns))
      .add("stop_signal", r.stop_signal)
      .add("heartbeat_s", r.heartbeat_s)
      .add("failure_timeout_s", r.failure_timeout_s);
  return o.str();
}

std::string failure_line(const FailureReport& r) {
  std::string line = "zerotrain: rank " + std::to_string(r.rank) + " (" + r.host + "): lost ";
  for (size_t i = 0; i < r.lost.size(); i++) {
    const PeerState& p = r.lost[i];
    line += (i ? "; lost " : "") + std::string("rank ") + std::to_string(p.rank) + " (" + p.host +
            ") at its step " + std::to_string(p.step) + ", phase " +
            shown_phase(p.phase, p.engine_phase) + ": ";
    const std::string silent = seconds_text(silent_seconds(p));
    if (p.cause == LossCause::ConnectionClosed)
      line += "connection closed, last heard " + silent + " s before";
    else if (p.cause == LossCause::HeartbeatTimeout) line += "no heartbeat for " + silent + " s";
    else
      line += "reported by rank " + std::to_string(p.reported_by) + ", last heard here " + silent +
              " s before";
  }
  return line;
}

std::string failure_record_path(const std::string& run_dir, int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank_%05d.json", rank);
  return run_dir + "/failure/" + name;
}

void write_failure_record(const std::string& run_dir, const FailureReport& r) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir + "/failure", ec);
  if (ec) throw IoError(run_dir + "/failure: cannot create: " + ec.message());
  write_file_atomic(failure_record_path(run_dir, r.rank), failure_record_json(r) + "\n");
}

}  // namespace zt
