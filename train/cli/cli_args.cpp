#include "train/cli/cli_args.h"

#include "data/input/input_scalar.h"
#include "train/config/config.h"

namespace zt {

namespace {

const CliOption* find_option(const CliSpec& spec, const std::string& name) {
  for (const CliOption& o : spec.options)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace

std::vector<std::string> usage_parts(const CliSpec& spec) {
  std::vector<std::string> parts = {"zerotrain", spec.command};
  if (!spec.positionals.empty()) parts.push_back(spec.positionals);
  for (const CliOption& o : spec.options) {
    std::string text = o.name + (o.value.empty() ? "" : " " + o.value);
    if (o.repeatable) text += " ...";
    parts.push_back(o.required ? text : "[" + text + "]");
  }
  return parts;
}

std::string usage_line(const CliSpec& spec) {
  std::string out = "usage:";
  for (const std::string& part : usage_parts(spec)) out += " " + part;
  return out;
}

bool asks_for_help(const CliSpec& spec, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); i++) {
    if (args[i] == "--help" || args[i] == "-h") return true;
    const CliOption* o = find_option(spec, args[i]);
    if (o && !o->value.empty()) i++;  // its value, which may itself read "-h"
  }
  return false;
}

CliArgs::CliArgs(const CliSpec& spec, const std::vector<std::string>& args)
    : command_(spec.command), usage_(usage_line(spec)) {
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      positional_.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CliOption* o = find_option(spec, name);
    if (!o) fail("unknown option '" + name + "'");
    if (!o->repeatable && has(name)) fail(name + " given twice");
    std::string value;
    if (!o->value.empty()) {
      if (eq != std::string::npos) value = a.substr(eq + 1);
      else if (i + 1 < args.size()) value = args[++i];
      else fail(name + " needs a value");
    } else if (eq != std::string::npos) {
      fail(name + " takes no value");
    }
    values_.push_back({name, value});
  }
  if (positional_.size() > spec.max_positional)
    fail("unexpected argument '" + positional_[spec.max_positional] + "'");
  if (positional_.size() < spec.min_positional) fail("missing argument");
  for (const CliOption& o : spec.options)
    if (o.required && !has(o.name)) fail(o.name + " " + o.value + " is required");
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
         "], got " + quote_value(text));
  return v;
}

double CliArgs::get_double(const std::string& name, double fallback, const Range& range) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  double v = 0;
  if (!parse_number(text, v) || !in_range(v, range))
    fail(name + " expects a number " + range_text(range) + ", got " + quote_value(text));
  return v;
}

void CliArgs::fail(const std::string& what) const {
  throw ConfigError(command_ + ": " + what + "; " + usage_);
}

WorldLayout world_layout(const CliArgs& f) {
  WorldLayout w;
  w.world = static_cast<int>(f.get_int("--world", 1, 1, 1 << 20));
  w.ranks_per_node = static_cast<int>(f.get_int("--ranks-per-node", w.world, 1, w.world));
  if (w.world % w.ranks_per_node != 0)
    f.fail("--ranks-per-node " + std::to_string(w.ranks_per_node) + " does not divide --world " +
           std::to_string(w.world));
  return w;
}

}  // namespace zt
