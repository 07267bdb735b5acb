// The shared command-line parser: both option spellings, repeatable options,
// positional counts and the one-line errors every subcommand relies on; and the
// command registry's generated usage and help.
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/cli/cli_args.h"
#include "train/cli/command_registry.h"
#include "train/config/config.h"

namespace zt {
namespace {

const CliSpec kSpec = {"cmd",
                       "X",
                       1,
                       1,
                       {{"--world", "W", "ranks"},
                        {"--set", "K=V", "an override", true},
                        {"--resume", "", "continue"},
                        {"--rate", "R", "a rate"}}};

CliArgs parse(const std::vector<std::string>& args) { return CliArgs(kSpec, args); }

std::string world_error(const std::vector<std::string>& args) {
  return error_of<ConfigError>([&] { parse(args).get_int("--world", 1, 1, 8); });
}

TEST_CASE("cli: options with and without '=', repeats and flags", "[config]") {
  CliArgs a = parse({"x.yaml", "--world=4", "--set", "a.b=1", "--set=c.d=2", "--resume"});
  CHECK(a.positional() == std::vector<std::string>{"x.yaml"});
  CHECK(a.get_int("--world", 0, 1, 8) == 4);
  CHECK(a.all("--set") == std::vector<std::string>{"a.b=1", "c.d=2"});
  CHECK(a.has("--resume"));
  CHECK(!a.has("--rate"));
  CHECK(a.get_double("--rate", 2.5, between(0, 10, true)) == 2.5);
  CHECK(parse({"x", "--world", "5e1"}).get_int("--world", 0, 1, 100) == 50);
}

TEST_CASE("cli: every bad input is one line naming the option and the usage", "[config]") {
  require_parts(
      world_error({"x", "--world", "two"}),
      {"cmd: --world expects an integer in [1, 8]", "'two'", "usage: zerotrain cmd X [--world W]"});
  require_parts(world_error({"x", "--world", "0"}), {"--world", "'0'"});
  require_parts(world_error({"x", "--world"}), {"--world needs a value"});
  require_parts(world_error({"x", "--bogus"}), {"unknown option '--bogus'"});
  require_parts(world_error({"x", "--world=1", "--world=2"}), {"--world given twice"});
  require_parts(world_error({"x", "--resume=yes"}), {"--resume takes no value"});
  require_parts(world_error({}), {"missing argument"});
  require_parts(world_error({"x", "y"}), {"unexpected argument 'y'"});
  CliArgs a = parse({"x", "--world", "9", "--rate", "nan"});
  CHECK_THROWS_AS(a.get_int("--world", 0, 1, 8), ConfigError);
  CHECK_THROWS_AS(a.get_double("--rate", 0, between(0, 1, true)), ConfigError);
  // The range printed is the range checked, both ends.
  for (const char* bad : {"0", "1", "inf", "-inf", "1e400", "-0.5", "0x1p-2", " 0.5"})
    require_parts(error_of<ConfigError>([&] {
                    parse({"x", "--rate", bad}).get_double("--rate", 1, open_between(0, 1, false));
                  }),
                  {"--rate expects a number in (0, 1), got '"});
  CHECK(parse({"x", "--rate", "0.999"}).get_double("--rate", 1, open_between(0, 1, false)) ==
        0.999);
  for (const auto& args : std::vector<std::vector<std::string>>{{"x", "--world", "two"}, {}})
    CHECK(world_error(args).find('\n') == std::string::npos);
}

TEST_CASE("cli: the usage line is generated from the spec", "[config]") {
  CHECK(usage_line(kSpec) ==
        "usage: zerotrain cmd X [--world W] [--set K=V ...] [--resume] [--rate R]");
  CliSpec required = kSpec;
  required.options[0].required = true;
  CHECK(usage_line(required) ==
        "usage: zerotrain cmd X --world W [--set K=V ...] [--resume] [--rate R]");
  try {
    CliArgs(required, {"x"});
    FAIL("a missing required option was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "cmd: --world W is required; " + usage_line(required));
  }
}

TEST_CASE("cli: help is asked for where an option may stand, not in a value", "[config]") {
  CHECK(asks_for_help(kSpec, {"--help"}));
  CHECK(asks_for_help(kSpec, {"x", "--bogus", "-h"}));
  CHECK(asks_for_help(kSpec, {"--resume", "--help"}));
  CHECK_FALSE(asks_for_help(kSpec, {"x", "--world", "-h"}));
  CHECK_FALSE(asks_for_help(kSpec, {"x", "--set", "--help"}));
  CHECK_FALSE(asks_for_help(kSpec, {"x", "--world=-h"}));
}

TEST_CASE("registry: every command's help and the overview list each of its options", "[config]") {
  const std::string overview = commands_overview();
  std::vector<std::string> names;
  for (const Command& c : commands()) {
    INFO(c.cli.command);
    CHECK(find_command(c.cli.command) == &c);
    for (const std::string& other : names) CHECK(other != c.cli.command);
    names.push_back(c.cli.command);
    CHECK(!c.summary.empty());
    CHECK(c.run != nullptr);
    const std::string help = command_help(c);
    CHECK(help.rfind("usage: zerotrain " + c.cli.command, 0) == 0);
    CHECK(overview.find("\n  " + c.cli.command + ": " + c.summary + "\n") != std::string::npos);
    for (const CliOption& o : c.cli.options) {
      INFO(o.name);
      CHECK(!o.help.empty());
      CHECK(help.find("\n  " + o.name + (o.value.empty() ? "" : " " + o.value)) !=
            std::string::npos);
      CHECK(overview.find(o.name) != std::string::npos);
    }
  }
  for (const char* name : {"train", "prepare", "eval", "sample", "export", "plan", "explain",
                           "report", "tokenize", "commbench", "config-reference"})
    CHECK(find_command(name) != nullptr);
  CHECK(find_command("frobnicate") == nullptr);
}

TEST_CASE("registry: a command parses against its own entry", "[config]") {
  const CliArgs plan = command_args("plan", {"c.yaml", "--world", "4", "--calls"});
  CHECK(plan.has("--calls"));
  CHECK(world_layout(plan).world == 4);
  try {
    command_args("report", {"runs", "--bogus"});
    FAIL("an unknown option was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "report: unknown option '--bogus'; " + usage_line(find_command("report")->cli));
  }
  CHECK_THROWS_AS(command_args("eval", {"c.yaml", "--calls"}), ConfigError);
}

}  // namespace
}  // namespace zt
