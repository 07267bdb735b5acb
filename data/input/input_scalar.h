// Numbers and switches typed by users (command-line options, config values,
// fields of the files commands read), parsed one way everywhere: finite,
// exact and in a stated range, so a message can quote the range it checked.
// "inf", "nan", hex, 1e400 and an integer that does not fit never pass, and no
// integer is rounded on its way in ("9007199254740993" and "9.007199254740993e15"
// are both that integer, or refused).
#pragma once
#include <cstdint>
#include <string>

namespace zt {

// An allowed numeric interval; an unset side is unbounded.
struct Range {
  bool has_min = false;
  double min = 0;
  bool min_inclusive = true;
  bool has_max = false;
  double max = 0;
  bool max_inclusive = true;
};
Range any_value();
Range at_least(double lo);                                    // [lo, inf)
Range above(double lo);                                       // (lo, inf)
Range between(double lo, double hi, bool hi_inclusive);       // [lo, hi] or [lo, hi)
Range open_between(double lo, double hi, bool hi_inclusive);  // (lo, hi] or (lo, hi)
bool in_range(double v, const Range& r);
// "in [0, 1)", ">= 1", "> 0"; "" for an unbounded range.
std::string range_text(const Range& r);

// Strict scalar parsers; false when the text is not exactly of the type.
// Integers accept integral scientific notation ("5e8", "1.5e3"), as DeepSpeed
// users write it, converted exactly: "1.5e0" and "1e30" (for int64) are refused.
bool parse_int64(const std::string& text, int64_t& out);
bool parse_uint64(const std::string& text, uint64_t& out);
// A finite decimal number (digits, sign, '.', exponent); nothing else.
bool parse_number(const std::string& text, double& out);
bool parse_bool(const std::string& text, bool& out);

// Shortest decimal text that reads back to exactly `v`.
std::string format_double(double v);
// `text` as given, cut to 24 characters with "..." when longer and control
// bytes as \xNN: a quoted value in a message stays one readable line.
std::string quote_value(const std::string& text);

}  // namespace zt
