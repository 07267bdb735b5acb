// The text pieces every report table is made of: numbers formatted one way,
// CSV fields quoted one way, Markdown rows built one way.
#pragma once
#include <string>
#include <vector>

namespace zt {

// One number through a printf format ("%.3g", "%.2fx").
std::string fmt(const char* format, double v);
// Twelve significant digits: exact for byte counts, ample for timings and
// enough to recompute a metric by hand.
std::string g12(double v);
// One CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);
// "| a | b |\n"
std::string markdown_row(const std::vector<std::string>& fields);

}  // namespace zt
