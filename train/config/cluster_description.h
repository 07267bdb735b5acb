// The emulated cluster a job runs on, as scripts/cluster.sh describes it in the
// JSON file that ZT_CLUSTER names (cluster.sh exports it to every rank). Runs
// record it in summary.json; commbench embeds it; the step-time model reads
// the link rate and delay from it.
#pragma once
#include <string>

namespace zt {

struct JsonValue;

struct ClusterDescription {
  std::string path;  // ZT_CLUSTER's value; empty: not on an emulated cluster
  std::string json;  // the file's text, trailing whitespace removed
  int nodes = 0, ranks_per_node = 0;
  double rate_bits_per_s = 0;  // each node link, each direction
  double delay_us = 0;         // one way, netem (0: none)
  bool present() const { return !json.empty(); }
};

// The description ZT_CLUSTER names, or an empty one when ZT_CLUSTER is unset.
// Throws ConfigError naming ZT_CLUSTER's file when it cannot be read or lacks
// nodes, ranks_per_node or link.rate_bits_per_s.
ClusterDescription read_cluster_description();
// The same fields from a description's JSON text, or from the parsed object
// (a summary.json's "cluster"; `json` stays empty there).
ClusterDescription parse_cluster_description(const std::string& json, const std::string& where);
ClusterDescription cluster_from_json(const JsonValue& root, const std::string& where);

}  // namespace zt
