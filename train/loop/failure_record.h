// What a surviving rank writes when its peer watch detects lost ranks
// (docs/recovery.md, "Failure detection"): RUN/failure/rank_RRRRR.json, one
// JSON object on one line whose first member, "summary", is a line of
// space-separated key=value pairs for scripts; and one line on stderr.
#pragma once
#include <string>

#include "zero/comm/peer_watch.h"

namespace zt {

// The phase a record names: the trainer's, or inside its forward_backward the
// engine's ("forward" or "backward").
std::string shown_phase(const std::string& trainer_phase, const std::string& engine_phase);
// The record's JSON text (without a trailing newline).
std::string failure_record_json(const FailureReport& r);
// "zerotrain: rank 2 (zt-n1): lost rank 1 (zt-n0) at its step 7, phase backward: ..."
std::string failure_line(const FailureReport& r);
// RUN/failure/rank_RRRRR.json
std::string failure_record_path(const std::string& run_dir, int rank);
// Creates RUN/failure and writes the record atomically; throws IoError.
void write_failure_record(const std::string& run_dir, const FailureReport& r);

}  // namespace zt
