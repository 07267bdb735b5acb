#include "train/report/portability_projection.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <stdexcept>

#include "model/param_table.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/config/zero_setup.h"
#include "train/report/report_prediction.h"
#include "zero/analysis/plan.h"

namespace zt {

ProjectedCluster parse_projected_cluster(const std::string& text) {
  static const std::regex form(
      R"(([1-9][0-9]{0,5})x([1-9][0-9]{0,5}):([0-9]+(\.[0-9]+)?)([kmg])bit)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw std::runtime_error("--project " + text +
                             ": expected NxG:RATE, e.g. 16x1:100mbit (RATE in kbit, mbit or gbit)");
  ProjectedCluster c;
  c.nodes = std::stoi(m[1]);
  c.ranks_per_node = std::stoi(m[2]);
  const double unit = m[5] == "k" ? 1e3 : m[5] == "m" ? 1e6 : 1e9;
  c.rate_bits_per_s = std::stod(m[3]) * unit;
  if (!(c.rate_bits_per_s > 0))
    throw std::runtime_error("--project " + text + ": expected a link rate above 0");
  c.text = text;
  return c;
}

namespace {

// One configuration's predicted tok/s on the cluster, from its measured run.
PortabilityRun project_run(const PortabilityRun& measured, const ProjectedCluster& c,
                           const NetworkModel& net) {
  const std::string dir = std::filesystem::path(measured.summary_path).parent_path().string();
  Config cfg = load_config(dir + "/config.yaml", {});
  const int world = c.nodes * c.ranks_per_node;
  const int64_t per_rank = cfg.train.global_batch_tokens / measured.world;
  cfg.train.global_batch_tokens = per_rank * world;
  validate_for_world(cfg, world);
  const ParamTable table(cfg.model);
  const int A = grad_accum_steps(cfg, world);
  const DType t = cfg.system.device == "cuda" ? DType::BF16 : DType::F32;
  const ZeroSetup setup = zero_setup(cfg, table, c.ranks_per_node);
  const NodeMap nodes = NodeMap::uniform(world, c.ranks_per_node);
  ComputeTimes compute;
  std::string label;
  if (!stated_emulated_compute(measured.summary_path, &compute, &label))
    compute = read_compute_times(measured.summary_path);
  const StepTimePrediction p =
      predict_step(plan_step(setup, table, world, A, t, nodes), world, A, nodes, net, compute);
  PortabilityRun r = measured;
  r.world = world;
  r.sittings_ran = 0;
  r.tokens_per_second = static_cast<double>(cfg.train.global_batch_tokens) / p.step_s;
  r.peak_flops = 0;
  return r;
}

}  // namespace

PortabilitySystem project_system(const ProjectedCluster& c,
                                 const std::vector<PortabilitySystem>& measured) {
  ClusterDescription link;
  link.nodes = c.nodes;
  link.ranks_per_node = c.ranks_per_node;
  link.rate_bits_per_s = c.rate_bits_per_s;
  const NetworkModel net = network_of_cluster(link);
  std::map<std::string, const PortabilityRun*> first;
  const PortabilitySystem* source = nullptr;
  for (const PortabilitySystem& s : measured)
    for (const PortabilityRun& r : s.runs)
      if (first.emplace(r.config, &r).second && !source) source = &s;
  PortabilitySystem sys;
  sys.name = "projection (step-time model): " + std::to_string(c.nodes) + "x" +
             std::to_string(c.ranks_per_node) + " ranks at " + c.text.substr(c.text.find(':') + 1);
  sys.projection = "the step-time model on an emulated cluster of " + c.text +
                   ", each configuration's config at " +
                   std::to_string(c.nodes * c.ranks_per_node) +
                   " ranks with its tokens per rank, and the compute its measured run stated or "
                   "measured";
  if (source) {
    sys.device = source->device;
    sys.emulated_compute = source->emulated_compute;
    sys.emulated_device = source->emulated_device;
    sys.emulated_source = source->emulated_source;
  }
  for (const auto& [config, run] : first) {
    try {
      sys.runs.push_back(project_run(*run, c, net));
    } catch (const std::exception& e) {
      throw std::runtime_error("report --portability: --project " + c.text + ": configuration " +
                               config + ": " + e.what());
    }
  }
  return sys;
}

}  // namespace zt
