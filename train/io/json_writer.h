// A minimal JSON object builder for metrics lines and summary.json. Doubles are
// written with 17 significant digits so they read back bit for bit.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace zt {

inline std::string json_escape(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

class JsonObject {
 public:
  JsonObject& add(const std::string& k, double v) { return raw(k, json_number(v)); }
  JsonObject& add(const std::string& k, int64_t v) { return raw(k, std::to_string(v)); }
  JsonObject& add(const std::string& k, uint64_t v) { return raw(k, std::to_string(v)); }
  JsonObject& add(const std::string& k, int v) { return raw(k, std::to_string(v)); }
  JsonObject& add(const std::string& k, bool v) { return raw(k, v ? "true" : "false"); }
  JsonObject& add(const std::string& k, const std::string& v) { return raw(k, json_escape(v)); }
  JsonObject& add(const std::string& k, const char* v) { return raw(k, json_escape(v)); }
  JsonObject& add(const std::string& k, const JsonObject& v) { return raw(k, v.str()); }
  JsonObject& raw(const std::string& k, const std::string& json) {
    body_ += (body_.empty() ? "" : ",") + json_escape(k) + ":" + json;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace zt
