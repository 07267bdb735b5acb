// ZT_FAULT_STOP_AT's value (train/loop/fault_stop.h): what parses, and the
// one-line refusal of everything else.
#include <string>

#include "tests/support/catch.h"
#include "train/config/config.h"
#include "train/loop/fault_stop.h"

namespace zt {
namespace {

TEST_CASE("ZT_FAULT_STOP_AT: STEP:PHASE:RANK parses into its three parts", "[fault_stop]") {
  const FaultStop f = parse_fault_stop("12:snapshot_copy:3");
  CHECK(f.step == 12);
  CHECK(f.phase == "snapshot_copy");
  CHECK(f.rank == 3);
  for (const char* phase :
       {"data", "forward", "backward", "reduce", "zero_step", "eval", "sample", "checkpoint"})
    CHECK(parse_fault_stop(std::string("0:") + phase + ":0").phase == phase);
}

TEST_CASE("ZT_FAULT_STOP_AT: a malformed value is refused in one line", "[fault_stop]") {
  for (const char* bad :
       {"", "5", "5:zero_step", "5:zero_step:1:2", "x:zero_step:1", "5:zero_step:-1",
        "-5:zero_step:1", "5:optimizer:1", "5::1", "5:forward_backward:0", " 5:forward:0"}) {
    INFO(bad);
    try {
      parse_fault_stop(bad);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CHECK(what.find("ZT_FAULT_STOP_AT: '" + std::string(bad) + "': expected STEP:PHASE:RANK") ==
            0);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
}

}  // namespace
}  // namespace zt
