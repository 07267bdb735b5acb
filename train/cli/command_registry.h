// Every zerotrain subcommand as one registry entry: its name, one-line summary,
// command-line spec (positionals and options with their help) and the function
// that runs it. main dispatches through it, each command parses its arguments
// from its own entry, and `zerotrain`, `zerotrain --help` and
// `zerotrain CMD --help` print text generated from it, so what a command accepts
// and what its usage says are one list.
#pragma once
#include <string>
#include <vector>

#include "train/cli/cli_args.h"

namespace zt {

struct Command {
  CliSpec cli;
  std::string summary;  // one line
  int (*run)(const std::vector<std::string>& args);
};

const std::vector<Command>& commands();
// The entry named `name`, or nullptr.
const Command* find_command(const std::string& name);
// The arguments of the registered command `name` parsed against its entry.
CliArgs command_args(const std::string& name, const std::vector<std::string>& args);

// `zerotrain` and `zerotrain --help`: every command's usage line and summary.
std::string commands_overview();
// `zerotrain CMD --help`: the usage, the summary and one line per option.
std::string command_help(const Command& command);

}  // namespace zt
