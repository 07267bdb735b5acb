// The one command-line parser every subcommand uses. A subcommand declares its
// options (name, value placeholder, whether it may repeat or is required, one
// line of help) and its positionals in a CliSpec; the parser accepts
// `--name value` and `--name=value`, collects positionals, and every typed
// getter turns bad text into one ConfigError line naming the command, the
// option, what was expected and what was given, followed by the usage line
// generated from the same spec, so the usage cannot drift from what is accepted.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/input/input_scalar.h"

namespace zt {

struct CliOption {
  std::string name;         // "--world"
  std::string value;        // placeholder of its value ("W"); empty for a flag
  std::string help;         // one line
  bool repeatable = false;  // e.g. --set
  bool required = false;
};

struct CliSpec {
  std::string command;      // "plan"
  std::string positionals;  // "CONFIG", "" when none
  size_t min_positional = 0, max_positional = 0;
  std::vector<CliOption> options;
};

// "zerotrain", "plan", "CONFIG", "--world W", "[--set K=V ...]", "[--calls]", ...
std::vector<std::string> usage_parts(const CliSpec& spec);
// "usage: zerotrain plan CONFIG --world W [--set K=V ...] [--calls] ..." on one line.
std::string usage_line(const CliSpec& spec);
// True when args ask for help (--help or -h where an option name may stand),
// whatever else they hold: help is answered before anything is checked.
bool asks_for_help(const CliSpec& spec, const std::vector<std::string>& args);

class CliArgs {
 public:
  // Throws ConfigError on an unknown option, a missing value, a repeated
  // non-repeatable option, a positional count outside the spec's bounds or a
  // missing required option.
  CliArgs(const CliSpec& spec, const std::vector<std::string>& args);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const;
  // The value of a valued option, or `fallback` when it was not given.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // Every value of a repeatable option, in order.
  std::vector<std::string> all(const std::string& name) const;
  // Typed values within [min, max]; `fallback` when absent. Integers accept
  // integral scientific notation (5e8), as config files do.
  int64_t get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  // A finite number in `range`; the message quotes the range as checked.
  double get_double(const std::string& name, double fallback, const Range& range) const;
  // ConfigError("<command>: <what>; <usage line>").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string command_, usage_;
  std::vector<std::string> positional_;
  std::vector<std::pair<std::string, std::string>> values_;  // in command-line order
};

// `--world W [--ranks-per-node G]` of plan and explain: W >= 1 (required by
// their specs), G dividing W (default W, one node). Fails through f with a
// one-line message.
struct WorldLayout {
  int world = 1, ranks_per_node = 1;
};
WorldLayout world_layout(const CliArgs& f);

}  // namespace zt
