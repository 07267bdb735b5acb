// The one command-line parser every subcommand uses. A subcommand declares its
// options (name, whether it takes a value, whether it may repeat); the parser
// accepts `--name value` and `--name=value`, collects positionals, and every
// typed getter turns bad text into one ConfigError line naming the command,
// the option, what was expected and what was given, followed by the usage.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct CliOption {
  std::string name;  // "--world"
  bool takes_value = true;
  bool repeatable = false;  // e.g. --set
};

class CliArgs {
 public:
  // Throws ConfigError on an unknown option, a missing value, a repeated
  // non-repeatable option, or a positional count outside [min_pos, max_pos].
  CliArgs(const std::string& command, const std::string& usage,
          const std::vector<CliOption>& options, const std::vector<std::string>& args,
          size_t min_positional, size_t max_positional);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const;
  // The value of a valued option, or `fallback` when it was not given.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // Every value of a repeatable option, in order.
  std::vector<std::string> all(const std::string& name) const;
  // Typed values within [min, max]; `fallback` when absent. Integers accept
  // integral scientific notation (5e8), as config files do.
  int64_t get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const std::string& name, double fallback, double min, double max,
                    bool min_exclusive = false) const;
  // ConfigError("<command>: <what>; <usage>").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string command_, usage_;
  std::vector<std::string> positional_;
  std::vector<std::pair<std::string, std::string>> values_;  // in command-line order
};

// `--world W [--ranks-per-node G]` of plan and explain: W >= 1 (required), G
// dividing W (default W, one node). Fails through f with a one-line message.
struct WorldLayout {
  int world = 1, ranks_per_node = 1;
};
WorldLayout world_layout(const CliArgs& f);

}  // namespace zt
