// Running report's Python plot scripts (scripts/plot_report.py,
// scripts/plot_portability.py) with /usr/bin/python3, and saying why not when
// they cannot run.
#pragma once
#include <string>
#include <vector>

namespace zt {

extern const char* const kPlotPython;

// Runs a program and returns its exit status (-1: could not start or killed).
// posix_spawn rather than system(): no shell sees the paths.
int run_program(const std::vector<std::string>& argv, bool quiet);

// Why the plots cannot be drawn ("" when they can; *script is then the path of
// scripts/<script_file>): --no-plots, no python, no matplotlib, or the script
// found neither under the current directory nor beside the binary
// (BIN/../scripts), where an installed build keeps it.
std::string plots_unavailable(bool plots_wanted, const std::string& script_file,
                              std::string* script);

// `relative` under the current directory, else beside the binary (BIN/../`relative`); "" if
// neither.
std::string find_project_file(const std::string& relative);

}  // namespace zt
