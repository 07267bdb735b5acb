// One run's summary.json for the report commands: read once (a regular file of
// bounded size, strict JSON by our own reader, whose messages name line and
// column), then looked up by dotted key ("zero.stage"). Every problem throws
// std::runtime_error "FILE: unreadable summary: WHY" on one line.
#pragma once
#include <cstdint>
#include <string>

#include "data/json_reader.h"

namespace zt {

class SummaryFile {
 public:
  explicit SummaryFile(const std::string& path);

  const std::string& path() const { return path_; }
  // The value at a dotted key, or nullptr when absent (a JSON null is present).
  const JsonValue* find(const std::string& dotted) const;
  // Keys later zerotrains added are absent from older summaries.
  bool has(const std::string& dotted) const { return find(dotted) != nullptr; }
  double number(const std::string& dotted) const;
  int64_t integer(const std::string& dotted) const;
  // A whole number from 0 to 2e9: counts and sizes of a model or a job.
  int count(const std::string& dotted) const;
  bool boolean(const std::string& dotted) const;
  std::string string(const std::string& dotted) const;
  // A string, or `fallback` when the key is absent or null.
  std::string text(const std::string& dotted, const std::string& fallback = "") const;
  [[noreturn]] void fail(const std::string& why) const;

 private:
  const JsonValue& at(const std::string& dotted) const;
  std::string path_;
  JsonValue root_;
};

}  // namespace zt
