#include "train/report/summary_file.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/input/escape_control.h"
#include "data/input/input_file.h"
#include "data/shard.h"

namespace zt {
namespace {

// Far above any summary.json a run writes (a few KiB), far below a memory problem.
constexpr uint64_t kSummaryMaxBytes = uint64_t(16) << 20;

}  // namespace

SummaryFile::SummaryFile(const std::string& path) : path_(path) {
  try {
    root_ = parse_json(read_small_file(path, "run summary", kSummaryMaxBytes), path,
                       JsonDialect::Strict);
  } catch (const JsonError& e) {
    throw std::runtime_error(std::string(e.what()) +
                             " (a truncated summary.json, or not one zerotrain wrote)");
  } catch (const DataError& e) {
    throw std::runtime_error(e.what());
  }
  if (root_.kind != JsonValue::Kind::object) fail("expected a JSON object");
}

const JsonValue* SummaryFile::find(const std::string& dotted) const {
  const JsonValue* v = &root_;
  for (size_t b = 0, e; v && b <= dotted.size(); b = e + 1) {
    e = std::min(dotted.find('.', b), dotted.size());
    v = v->kind == JsonValue::Kind::object ? v->find(dotted.substr(b, e - b)) : nullptr;
  }
  return v;
}

const JsonValue& SummaryFile::at(const std::string& dotted) const {
  const JsonValue* v = find(dotted);
  if (!v) fail("missing key '" + dotted + "'");
  return *v;
}

double SummaryFile::number(const std::string& dotted) const {
  const JsonValue& v = at(dotted);
  if (v.kind != JsonValue::Kind::number || !std::isfinite(v.number()))
    fail("key '" + dotted + "': expected a finite number, got " + describe_json(v));
  return v.number();
}

int64_t SummaryFile::integer(const std::string& dotted) const {
  const double v = number(dotted);
  // The range is checked before the cast, which a larger double makes undefined.
  if (v != std::floor(v) || !(std::fabs(v) < 9.2e18))
    fail("key '" + dotted + "': expected an integer, got '" + at(dotted).text + "'");
  return static_cast<int64_t>(v);
}

int SummaryFile::count(const std::string& dotted) const {
  const double v = number(dotted);
  if (v != std::floor(v) || v < 0 || v > 2e9)
    fail("key '" + dotted + "': expected a whole number from 0 to 2e9, got '" + at(dotted).text +
         "'");
  return static_cast<int>(v);
}

bool SummaryFile::boolean(const std::string& dotted) const {
  const JsonValue& v = at(dotted);
  if (v.kind != JsonValue::Kind::boolean)
    fail("key '" + dotted + "': expected true or false, got " + describe_json(v));
  return v.text == "true";
}

std::string SummaryFile::string(const std::string& dotted) const {
  const JsonValue& v = at(dotted);
  if (v.kind != JsonValue::Kind::string)
    fail("key '" + dotted + "': expected a string, got " + describe_json(v));
  return v.text;
}

std::string SummaryFile::text(const std::string& dotted, const std::string& fallback) const {
  const JsonValue* v = find(dotted);
  if (!v || v->kind == JsonValue::Kind::null) return fallback;
  if (v->kind != JsonValue::Kind::string)
    fail("key '" + dotted + "': expected a string, got " + describe_json(*v));
  return v->text;
}

void SummaryFile::fail(const std::string& why) const {
  throw std::runtime_error(path_ + ": unreadable summary: " + escape_control_bytes(why));
}

}  // namespace zt
