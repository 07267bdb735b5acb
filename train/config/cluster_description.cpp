#include "train/config/cluster_description.h"

#include <cctype>
#include <cstdlib>

#include "data/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/config/config.h"

namespace zt {
namespace {

double field(const JsonValue& obj, const char* key, const std::string& where, bool required) {
  const JsonValue* v = obj.find(key);
  if (!v || v->kind == JsonValue::Kind::null) {
    if (required) throw ConfigError(where + ": field '" + key + "' missing (expected a number)");
    return 0;
  }
  if (v->kind != JsonValue::Kind::number)
    throw ConfigError(where + ": field '" + key + "': expected a number, got " + describe_json(*v));
  return v->number();
}

}  // namespace

ClusterDescription cluster_from_json(const JsonValue& root, const std::string& where) {
  ClusterDescription c;
  if (root.kind != JsonValue::Kind::object)
    throw ConfigError(where + ": expected a JSON object (scripts/cluster.sh's cluster.json)");
  const double nodes = field(root, "nodes", where, true);
  const double ranks_per_node = field(root, "ranks_per_node", where, true);
  const JsonValue* link = root.find("link");
  if (!link || link->kind != JsonValue::Kind::object)
    throw ConfigError(where + ": field 'link' missing (expected an object with rate_bits_per_s)");
  c.rate_bits_per_s = field(*link, "rate_bits_per_s", where + ": link", true);
  c.delay_us = field(*link, "delay_us", where + ": link", false);
  // Checked before the casts to int, which a larger double would make undefined;
  // the bound keeps nodes x ranks_per_node within an int too.
  constexpr double kMaxCount = 1 << 15;
  if (!(nodes >= 1 && nodes <= kMaxCount) ||
      !(ranks_per_node >= 1 && ranks_per_node <= kMaxCount) || !(c.rate_bits_per_s > 0))
    throw ConfigError(where + ": expected nodes and ranks_per_node in [1, 32768] and a positive " +
                      "link.rate_bits_per_s");
  c.nodes = static_cast<int>(nodes);
  c.ranks_per_node = static_cast<int>(ranks_per_node);
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
