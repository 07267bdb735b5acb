// The shared command-line parser: both option spellings, repeatable options,
// positional counts and the one-line errors every subcommand relies on.
#include "tests/catch.h"
#include "tests/test_support.h"
#include "train/cli_args.h"
#include "train/config.h"

namespace zt {
namespace {

const std::vector<CliOption> kOptions = {
    {"--world"}, {"--set", true, true}, {"--resume", false}, {"--rate"}};

CliArgs parse(const std::vector<std::string>& args) {
  return CliArgs("cmd", "usage: cmd X", kOptions, args, 1, 1);
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args).get_int("--world", 1, 1, 8);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("cli: options with and without '=', repeats and flags", "[config]") {
  CliArgs a = parse({"x.yaml", "--world=4", "--set", "a.b=1", "--set=c.d=2", "--resume"});
  CHECK(a.positional() == std::vector<std::string>{"x.yaml"});
  CHECK(a.get_int("--world", 0, 1, 8) == 4);
  CHECK(a.all("--set") == std::vector<std::string>{"a.b=1", "c.d=2"});
  CHECK(a.has("--resume"));
  CHECK(!a.has("--rate"));
  CHECK(a.get_double("--rate", 2.5, 0, 10) == 2.5);
  CHECK(parse({"x", "--world", "5e1"}).get_int("--world", 0, 1, 100) == 50);
}

TEST_CASE("cli: every bad input is one line naming the option and the usage", "[config]") {
  require_parts(error_of({"x", "--world", "two"}),
                {"cmd: --world expects an integer in [1, 8]", "'two'", "usage: cmd X"});
  require_parts(error_of({"x", "--world", "0"}), {"--world", "'0'"});
  require_parts(error_of({"x", "--world"}), {"--world needs a value"});
  require_parts(error_of({"x", "--bogus"}), {"unknown option '--bogus'"});
  require_parts(error_of({"x", "--world=1", "--world=2"}), {"--world given twice"});
  require_parts(error_of({"x", "--resume=yes"}), {"--resume takes no value"});
  require_parts(error_of({}), {"missing argument"});
  require_parts(error_of({"x", "y"}), {"unexpected argument 'y'"});
  CliArgs a = parse({"x", "--world", "9", "--rate", "nan"});
  CHECK_THROWS_AS(a.get_int("--world", 0, 1, 8), ConfigError);
  CHECK_THROWS_AS(a.get_double("--rate", 0, 0, 1), ConfigError);
  CHECK_THROWS_AS(parse({"x", "--rate", "0"}).get_double("--rate", 1, 0, 1, true), ConfigError);
  for (const auto& args : std::vector<std::vector<std::string>>{{"x", "--world", "two"}, {}})
    CHECK(error_of(args).find('\n') == std::string::npos);
}

}  // namespace
}  // namespace zt
