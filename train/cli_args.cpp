#include "train/cli_args.h"

#include <cmath>

#include "train/config.h"
#include "train/config_schema.h"

namespace zt {

CliArgs::CliArgs(const std::string& command, const std::string& usage,
                 const std::vector<CliOption>& options, const std::vector<std::string>& args,
                 size_t min_positional, size_t max_positional)
    : command_(command), usage_(usage) {
  auto find = [&](const std::string& name) -> const CliOption* {
    for (const CliOption& o : options)
      if (o.name == name) return &o;
    return nullptr;
  };
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      positional_.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CliOption* o = find(name);
    if (!o) fail("unknown option '" + name + "'");
    if (!o->repeatable && has(name)) fail(name + " given twice");
    std::string value;
    if (o->takes_value) {
      if (eq != std::string::npos) value = a.substr(eq + 1);
      else if (i + 1 < args.size()) value = args[++i];
      else fail(name + " needs a value");
    } else if (eq != std::string::npos) {
      fail(name + " takes no value");
    }
    values_.push_back({name, value});
  }
  if (positional_.size() < min_positional || positional_.size() > max_positional) {
    if (positional_.size() > max_positional)
      fail("unexpected argument '" + positional_[max_positional] + "'");
    fail("missing argument");
  }
}

bool CliArgs::has(const std::string& name) const {
  for (const auto& [n, v] : values_)
    if (n == name) return true;
  return false;
}

std::string CliArgs::get(const std::string& name, const std::string& fallback) const {
  for (const auto& [n, v] : values_)
    if (n == name) return v;
  return fallback;
}

std::vector<std::string> CliArgs::all(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [n, v] : values_)
    if (n == name) out.push_back(v);
  return out;
}

int64_t CliArgs::get_int(const std::string& name, int64_t fallback, int64_t min,
                         int64_t max) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  int64_t v = 0;
  if (!parse_int64(text, v) || v < min || v > max)
    fail(name + " expects an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], got '" + text + "'");
  return v;
}

double CliArgs::get_double(const std::string& name, double fallback, double min, double max,
                           bool min_exclusive) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  double v = 0;
  if (!parse_number(text, v) || !std::isfinite(v) || !(min_exclusive ? v > min : v >= min) ||
      v > max)
    fail(name + " expects a number in " + (min_exclusive ? "(" : "[") + format_double(min) + ", " +
         format_double(max) + "], got '" + text + "'");
  return v;
}

void CliArgs::fail(const std::string& what) const {
  throw ConfigError(command_ + ": " + what + "; " + usage_);
}

WorldLayout world_layout(const CliArgs& f) {
  if (!f.has("--world")) f.fail("--world W is required");
  WorldLayout w;
  w.world = static_cast<int>(f.get_int("--world", 1, 1, 1 << 20));
  w.ranks_per_node = static_cast<int>(f.get_int("--ranks-per-node", w.world, 1, w.world));
  if (w.world % w.ranks_per_node != 0)
    f.fail("--ranks-per-node " + std::to_string(w.ranks_per_node) + " does not divide --world " +
           std::to_string(w.world));
  return w;
}

}  // namespace zt
