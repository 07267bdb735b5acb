#include "train/config/cluster_description.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "data/input/input_file.h"
#include "data/input/input_scalar.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/config/config.h"

namespace zt {
namespace {

// A number in `range` (an integer when `integer`); absent or null gives 0 when
// not required. Each message names the key and the range it checked.
double field(const JsonValue& obj, const char* key, const std::string& where, bool required,
             const Range& range, bool integer) {
  const char* kind = integer ? "an integer" : "a number";
  const std::string expected = std::string(kind) + " " + range_text(range);
  const JsonValue* v = obj.find(key);
  if (!v || v->kind == JsonValue::Kind::null) {
    if (required)
      throw ConfigError(where + ": field '" + key + "' missing (expected " + expected + ")");
    return 0;
  }
  const double x = v->kind == JsonValue::Kind::number ? v->number() : 0;
  if (v->kind != JsonValue::Kind::number || !in_range(x, range) || (integer && x != std::floor(x)))
    throw ConfigError(where + ": field '" + key + "': expected " + expected + ", got " +
                      describe_json(*v));
  return x;
}

}  // namespace

ClusterDescription cluster_from_json(const JsonValue& root, const std::string& where) {
  ClusterDescription c;
  if (root.kind != JsonValue::Kind::object)
    throw ConfigError(where + ": expected a JSON object (scripts/cluster.sh's cluster.json)");
  const Range ranks = between(1, 1 << 20, true);
  c.nodes = static_cast<int>(field(root, "nodes", where, true, ranks, true));
  c.ranks_per_node = static_cast<int>(field(root, "ranks_per_node", where, true, ranks, true));
  const JsonValue* link = root.find("link");
  if (!link || link->kind != JsonValue::Kind::object)
    throw ConfigError(where + ": field 'link' missing (expected an object with rate_bits_per_s)");
  c.rate_bits_per_s = field(*link, "rate_bits_per_s", where + ": link", true, above(0), false);
  // netem takes delays up to minutes; an hour per hop is surely a typo.
  c.delay_us = field(*link, "delay_us", where + ": link", false, between(0, 3.6e9, true), false);
  if (double(c.nodes) * c.ranks_per_node > double(1 << 20))
    throw ConfigError(where + ": nodes x ranks_per_node is above 2^20 ranks");
  return c;
}

ClusterDescription parse_cluster_description(const std::string& json, const std::string& where) {
  ClusterDescription c;
  try {
    c = cluster_from_json(parse_json(json, where, JsonDialect::Strict), where);
  } catch (const JsonError& e) {
    throw ConfigError(e.what());
  }
  c.json = json;
  while (!c.json.empty() && std::isspace(static_cast<unsigned char>(c.json.back())))
    c.json.pop_back();
  return c;
}

ClusterDescription read_cluster_description() {
  const char* path = std::getenv("ZT_CLUSTER");
  if (!path || !*path) return {};
  const std::string where = std::string("ZT_CLUSTER=") + path;
  std::string text;
  try {
    text = read_small_file(path, "cluster description", kConfigMaxBytes);
  } catch (const DataError& e) {
    throw ConfigError(where + ": " + e.what());
  }
  ClusterDescription c = parse_cluster_description(text, where);
  c.path = path;
  return c;
}

}  // namespace zt
