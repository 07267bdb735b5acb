#include "tests/support/catch.h"
#include "zero/deepspeed_release.h"

using zt::DeepSpeedRelease;
using zt::parse_deepspeed_release;

TEST_CASE("deepspeed release: parses MAJOR.MINOR.PATCH and orders numerically",
          "[deepspeed_release]") {
  DeepSpeedRelease a = parse_deepspeed_release("0.9.5");
  DeepSpeedRelease b = parse_deepspeed_release("0.10.3");
  CHECK(a.major == 0);
  CHECK(a.minor == 9);
  CHECK(a.patch == 5);
  CHECK(a < b);  // numerically, not as text ("0.9.5" > "0.10.3" as strings)
  CHECK_FALSE(b < a);
  CHECK(b.str() == "0.10.3");
  CHECK(parse_deepspeed_release("1.0.0") == DeepSpeedRelease{1, 0, 0});
  CHECK(parse_deepspeed_release("0.14.4") <= parse_deepspeed_release("0.14.4"));
  CHECK(parse_deepspeed_release("0.14.4") != parse_deepspeed_release("0.14.5"));
}

TEST_CASE("deepspeed release: anything but three decimal numbers is refused in one line",
          "[deepspeed_release]") {
  for (const char* bad : {"", "0.14", "0.14.4.1", "0.14.4rc1", "v0.14.4", "0..4", "0.14.",
                          " 0.14.4", "0.14.-1", "0.14.99999", "0,14,4"}) {
    INFO(bad);
    try {
      parse_deepspeed_release(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      std::string msg = e.what();
      CHECK(msg.find("expected MAJOR.MINOR.PATCH") != std::string::npos);
      CHECK(msg.find('\n') == std::string::npos);
    }
  }
}
