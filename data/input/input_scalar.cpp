#include "data/input/input_scalar.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

#include "data/input/escape_control.h"

namespace zt {

Range any_value() { return Range{}; }

Range at_least(double lo) {
  Range r;
  r.has_min = true;
  r.min = lo;
  return r;
}

Range above(double lo) {
  Range r = at_least(lo);
  r.min_inclusive = false;
  return r;
}

Range between(double lo, double hi, bool hi_inclusive) {
  Range r = at_least(lo);
  r.has_max = true;
  r.max = hi;
  r.max_inclusive = hi_inclusive;
  return r;
}

Range open_between(double lo, double hi, bool hi_inclusive) {
  Range r = between(lo, hi, hi_inclusive);
  r.min_inclusive = false;
  return r;
}

bool in_range(double v, const Range& r) {
  const bool low_ok = !r.has_min || (r.min_inclusive ? v >= r.min : v > r.min);
  const bool high_ok = !r.has_max || (r.max_inclusive ? v <= r.max : v < r.max);
  return low_ok && high_ok;
}

std::string range_text(const Range& r) {
  if (!r.has_min) return "";
  if (r.has_max)
    return "in " + std::string(r.min_inclusive ? "[" : "(") + format_double(r.min) + ", " +
           format_double(r.max) + (r.max_inclusive ? "]" : ")");
  return std::string(r.min_inclusive ? ">= " : "> ") + format_double(r.min);
}

// from_chars (locale-independent) on text limited to digits, sign, '.', 'e',
// so that "inf", "nan" and hex never pass; an overflow is refused, not inf.
bool parse_number(const std::string& text, double& out) {
  bool has_digit = false;
  for (char ch : text) {
    if (std::isdigit(static_cast<unsigned char>(ch))) has_digit = true;
    else if (std::string_view("+-.eE").find(ch) == std::string_view::npos) return false;
  }
  if (!has_digit) return false;
  const char* first = text.data();
  const char* last = first + text.size();
  if (*first == '+') ++first;
  double v = 0;
  auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last || !std::isfinite(v)) return false;
  out = v;
  return true;
}

namespace {

// The sign and magnitude of an integer written as [sign] digits [. digits]
// [e [sign] digits], exactly, or false when it is not an integer or its
// magnitude does not fit 64 bits.
bool integer_magnitude(const std::string& text, bool& negative, uint64_t& magnitude) {
  size_t i = 0;
  const size_t n = text.size();
  negative = false;
  if (i < n && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  std::string mantissa;
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && std::isdigit(static_cast<unsigned char>(text[i])))
    mantissa += text[i++], ++int_digits;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i])))
      mantissa += text[i++], ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  long exponent = 0;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    const size_t exp_start = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (exponent > 100000) return false;  // far beyond any integer we take
      exponent = exponent * 10 + (text[i++] - '0');
    }
    if (i == exp_start) return false;
    if (exp_negative) exponent = -exponent;
  }
  if (i != n) return false;
  long shift = exponent - long(frac_digits);  // value = mantissa x 10^shift
  const size_t first_nonzero = mantissa.find_first_not_of('0');
  if (first_nonzero == std::string::npos) {
    magnitude = 0;
    return true;
  }
  mantissa.erase(0, first_nonzero);
  while (shift < 0) {
    if (mantissa.back() != '0') return false;  // a fractional part: not an integer
    mantissa.pop_back();
    ++shift;
  }
  if (long(mantissa.size()) + shift > 20) return false;
  const std::string digits = mantissa + std::string(size_t(shift), '0');
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  return ec == std::errc() && end == digits.data() + digits.size();
}

}  // namespace

bool parse_uint64(const std::string& text, uint64_t& out) {
  bool negative = false;
  uint64_t magnitude = 0;
  if (!integer_magnitude(text, negative, magnitude) || (negative && magnitude != 0)) return false;
  out = magnitude;
  return true;
}

bool parse_int64(const std::string& text, int64_t& out) {
  bool negative = false;
  uint64_t magnitude = 0;
  if (!integer_magnitude(text, negative, magnitude) ||
      magnitude > uint64_t(INT64_MAX) + (negative ? 1 : 0))
    return false;
  out = negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  return true;
}

bool parse_bool(const std::string& text, bool& out) {
  std::string t = text;
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t != "true" && t != "false") return false;
  out = t == "true";
  return true;
}

std::string format_double(double v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

std::string quote_value(const std::string& text) {
  return "'" + escape_control_bytes(text.substr(0, 24)) + (text.size() > 24 ? "...'" : "'");
}

}  // namespace zt
