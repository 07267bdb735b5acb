#include "train/config/grid_cluster_file.h"

#include <cmath>
#include <cstdio>

#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/config/config.h"
#include "train/config/network_file.h"

namespace zt {
namespace {

constexpr uint64_t kPresetMaxBytes = uint64_t(1) << 20;
// Defaults where a preset is silent (NVIDIA H100 SXM datasheet: 80 GB HBM3 at
// 3.35 TB/s), and an assumed 40% of the peak on the matrix products.
constexpr double kDefaultMemoryGB = 80, kDefaultMemoryTBps = 3.35, kDefaultUtilisation = 0.40;

std::string figure(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// The positive number at obj[key], or `fallback` (0: required) when absent.
double positive_or(const JsonValue* obj, const std::string& key, const std::string& where,
                   double fallback) {
  const JsonValue* v = obj ? obj->find(key) : nullptr;
  if (!v) {
    if (fallback > 0) return fallback;
    throw ConfigError(where + ": key '" + key + "' missing (expected a positive number)");
  }
  if (v->kind != JsonValue::Kind::number || !(v->number() > 0))
    throw ConfigError(where + ": key '" + key + "': expected a positive number, got " +
                      describe_json(*v));
  return v->number();
}

}  // namespace

GridClusterFile read_grid_cluster(const std::string& path, int nodes) {
  const NetworkModel net = read_network_file(path);
  JsonValue root;
  try {
    root = parse_json(read_small_file(path, "network file", kPresetMaxBytes), path,
                      JsonDialect::Strict);
  } catch (const JsonError& e) {
    throw ConfigError(e.what());
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  if (!net.curves.empty() || !root.find("preset"))
    throw ConfigError(path +
                      ": expected a network preset (configs/networks/*.json: link figures and "
                      "gpus_per_node), not measured curves or a cluster description");
  GridClusterFile out;
  out.preset = root.find("preset")->text;
  GridCluster& k = out.cluster;
  k.nodes = nodes;
  k.link = net.link;
  const double per_node = positive_or(&root, "gpus_per_node", path, 0);
  if (per_node != std::floor(per_node) || per_node > 1024)
    throw ConfigError(path + ": key 'gpus_per_node': expected an integer in [1, 1024]");
  k.gpus_per_node = static_cast<int>(per_node);

  const bool has_memory = root.find("device_memory_GB") != nullptr;
  k.device_memory_bytes = positive_or(&root, "device_memory_GB", path, kDefaultMemoryGB) * 1e9;
  out.assumptions.push_back(
      "device memory: " + figure(k.device_memory_bytes / 1e9) + " GB per GPU" +
      (has_memory ? " (the preset's)" : " (default: NVIDIA H100 SXM; the preset gives none)"));

  const JsonValue* peak = root.find("peak_TFLOPs");
  if (peak && peak->kind == JsonValue::Kind::object)
    out.peak_flops_per_s = positive_or(peak, "value", path + ": peak_TFLOPs", 0) * 1e12;
  const JsonValue* compute = root.find("compute");
  const bool has_rate = compute && compute->find("effective_TFLOPs");
  if (has_rate) {
    k.flops_per_s = positive_or(compute, "effective_TFLOPs", path + ": compute", 0) * 1e12;
  } else if (out.peak_flops_per_s > 0) {
    k.flops_per_s = kDefaultUtilisation * out.peak_flops_per_s;
  } else {
    throw ConfigError(path +
                      ": key 'compute.effective_TFLOPs' or 'peak_TFLOPs.value' missing (expected "
                      "the GPU's achieved or peak TFLOP/s)");
  }
  std::string rate = "compute: " + figure(k.flops_per_s / 1e12) + " TFLOP/s achieved per GPU";
  if (out.peak_flops_per_s > 0)
    rate += ", " + figure(100 * k.flops_per_s / out.peak_flops_per_s) + "% of the " +
            figure(out.peak_flops_per_s / 1e12) + " TFLOP/s bf16 peak";
  rate += has_rate ? " (the preset's effective rate" : " (default: 40% of the peak";
  rate += ", an assumption; the same at every T and model size)";
  out.assumptions.push_back(rate);

  const bool has_bandwidth = compute && compute->find("memory_TBps");
  k.memory_bytes_per_s =
      positive_or(compute, "memory_TBps", path + ": compute", kDefaultMemoryTBps) * 1e12;
  out.assumptions.push_back("optimizer: AdamW at 32 bytes per element of the rank's state, " +
                            figure(k.memory_bytes_per_s / 1e12) + " TB/s device memory" +
                            (has_bandwidth ? " (the preset's)" : " (default: NVIDIA H100 SXM)"));
  out.assumptions.push_back(
      "links: intra-node " + figure(k.link.intra_node_bytes_per_s / 1e9) + " GB/s per GPU, " +
      "inter-node " + figure(k.link.inter_node_bytes_per_s / 1e9) + " GB/s per node each way, " +
      figure(k.link.intra_latency_s * 1e6) + " / " + figure(k.link.inter_latency_s * 1e6) +
      " us per ring step (the preset's, with their sources in the file)");
  return out;
}

}  // namespace zt
