// Networks and compute times for the step-time model (zero/analysis/step_time_model.h),
// read from files users have: a commbench JSON (measured curves), a preset of
// published figures (configs/networks/*.json), an emulated cluster's
// description (its shaped link), and a run's summary.json (measured compute).
#pragma once
#include <string>

#include "model/gpt_config.h"
#include "train/config/cluster_description.h"
#include "zero/analysis/step_time_model.h"

namespace zt {

// A commbench --out file (each point's median call, else its mean), a network
// preset, or an emulated cluster's cluster.json; which one, from its keys.
// Throws ConfigError naming the file and key.
NetworkModel read_network_file(const std::string& path);
// The shaped link of an emulated cluster (scripts/cluster.sh): its rate each
// way per node, its one-way delay per algorithm step; inside a node shared
// memory is taken as free beside the link.
NetworkModel network_of_cluster(const ClusterDescription& c);
// Why a network cannot predict a job of `world` ranks, `ranks_per_node` per
// node: "" when it can (a link, or curves measured at that very layout).
std::string network_layout_mismatch(const NetworkModel& net, int world, int ranks_per_node);

// "" when `net` holds commbench curves measured over groups of `size` ranks
// `stride` apart at this world and ranks per node (a grid's tensor groups:
// size T, stride 1; its data-parallel groups: size D, stride T); else what
// was measured instead, for a one-line error.
std::string group_curves_mismatch(const NetworkModel& net, int world, int ranks_per_node, int size,
                                  int stride);
// "12 layers, 12 heads, width 768, vocabulary 50304, T = 1024, micro-batch 16":
// what a compute time was measured for, compared before it predicts a plan.
std::string compute_shape(const GPTConfig& model, int micro_batch);
// A run's measured compute: summary.json's timing (per micro-step and
// optimizer), for a run at `world` ranks on the same hardware.
ComputeTimes read_compute_times(const std::string& summary_path);
// The backend a run's summary.json says it ran on ("cpu", "cuda:NVIDIA H200"), or "".
std::string summary_device(const std::string& summary_path);
// "F,O": milliseconds per micro-step (forward + backward) and per optimizer step.
ComputeTimes parse_compute_ms(const std::string& text, const std::string& where);

}  // namespace zt
