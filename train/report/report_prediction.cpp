#include "train/report/report_prediction.h"

#include <map>

#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "model/param_table.h"
#include "train/config/cluster_description.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/config/zero_setup.h"
#include "zero/analysis/plan.h"

namespace zt {
namespace {

constexpr uint64_t kSummaryMaxBytes = uint64_t(64) << 20;

// The emulated cluster a run recorded (none: nodes = 0) and its node layout.
struct RunPlacement {
  ClusterDescription cluster;
  int ranks_per_node = 0;
};

RunPlacement placement_of(const std::string& summary_path, int world) {
  const std::string text = read_small_file(summary_path, "run summary", kSummaryMaxBytes);
  const JsonValue root = parse_json(text, summary_path, JsonDialect::Strict);
  RunPlacement p;
  p.ranks_per_node = world;
  if (const JsonValue* comm = root.find("comm"))
    if (const JsonValue* g = comm->find("ranks_per_node"))
      if (g->kind == JsonValue::Kind::number) p.ranks_per_node = static_cast<int>(g->number());
  const JsonValue* c = root.find("cluster");
  if (c && c->kind == JsonValue::Kind::object)
    p.cluster = cluster_from_json(*c, summary_path + ": cluster");
  return p;
}

}  // namespace

void predict_rows(RunsDir& runs, const std::string& runs_dir, const NetworkModel* network) {
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < runs.rows.size(); i++) row_of[runs.rows[i].run] = i;
  for (ReportRow& r : runs.rows) {
    const std::string dir = runs_dir + "/" + r.run;
    const std::string summary = dir + "/summary.json";
    try {
      const RunPlacement where = placement_of(summary, r.world);
      NetworkModel net;
      if (network) net = *network;
      else if (where.cluster.nodes > 0) net = network_of_cluster(where.cluster);
      else continue;
      const Config cfg = load_config(dir + "/config.yaml", {});
      const ParamTable table(cfg.model);
      const int A = grad_accum_steps(cfg, r.world);
      const DType t = cfg.system.device == "cuda" ? DType::BF16 : DType::F32;
      const int g = where.ranks_per_node > 0 && r.world % where.ranks_per_node == 0
                        ? where.ranks_per_node
                        : r.world;
      const ZeroSetup setup = zero_setup(cfg, table, g);
      const std::string mismatch = network_layout_mismatch(net, r.world, g);
      if (!mismatch.empty()) throw ConfigError("--network: " + mismatch);
      const NodeMap nodes = NodeMap::uniform(r.world, g);
      const StepPlan plan = plan_step(setup, table, r.world, A, t, nodes);
      const ComputeTimes compute = read_compute_times(summary);
      const StepTimePrediction p = predict_step(plan, r.world, A, nodes, net, compute);
      r.has_prediction = true;
      r.predicted_step_ms = p.step_s * 1e3;
      r.predicted_exposed_ms = p.exposed_s * 1e3;
      r.network = net.source;
    } catch (const JsonError& e) {
      throw std::runtime_error(std::string("report: ") + e.what());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("report: " + r.run + ": cannot predict: " + e.what());
    }
  }
  for (ReportRow& r : runs.rows) {
    if (!r.has_prediction || !r.has_baseline) continue;
    const ReportRow& base = runs.rows[row_of.at(r.baseline_run)];
    if (base.has_prediction) r.predicted_speedup = base.predicted_step_ms / r.predicted_step_ms;
    if (r.step_ms > 0) r.step_speedup = base.step_ms / r.step_ms;
  }
}

}  // namespace zt
