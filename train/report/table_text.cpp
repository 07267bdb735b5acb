#include "train/report/table_text.h"

#include <cstdio>

namespace zt {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string g12(double v) { return fmt("%.12g", v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string markdown_row(const std::vector<std::string>& fields) {
  std::string s = "|";
  for (const std::string& x : fields) s += " " + x + " |";
  return s + "\n";
}

}  // namespace zt
