#include "train/report/report_prediction.h"

#include <cstdio>
#include <map>
#include <stdexcept>

#include "data/json_reader.h"
#include "model/param_table.h"
#include "train/config/cluster_description.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/config/zero_setup.h"
#include "train/report/summary_file.h"
#include "zero/analysis/grid_step_time.h"
#include "zero/analysis/plan.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

// The emulated cluster a run recorded (none: nodes = 0) and its node layout.
struct RunPlacement {
  ClusterDescription cluster;
  int ranks_per_node = 0;
};

RunPlacement placement_of(const std::string& summary_path, int world) {
  const SummaryFile s(summary_path);
  RunPlacement p;
  p.ranks_per_node = s.has("comm.ranks_per_node") ? s.count("comm.ranks_per_node") : world;
  const JsonValue* c = s.find("cluster");
  if (c && c->kind == JsonValue::Kind::object)
    p.cluster = cluster_from_json(*c, summary_path + ": cluster");
  return p;
}

// The curves of `files` measured at this row's layout over groups of `size`
// ranks `stride` apart; null when none is.
const NetworkModel* group_curves_for(const std::vector<NetworkModel>& files, int world,
                                     int ranks_per_node, int size, int stride) {
  for (const NetworkModel& f : files)
    if (group_curves_mismatch(f, world, ranks_per_node, size, stride).empty()) return &f;
  return nullptr;
}

}  // namespace

bool stated_emulated_compute(const std::string& summary_path, ComputeTimes* out,
                             std::string* label) {
  const SummaryFile s(summary_path);
  if (s.text("compute_mode", "real") != "emulated") return false;
  const JsonValue* e = s.find("emulated_compute");
  if (!e || e->kind != JsonValue::Kind::object)
    throw ConfigError(summary_path +
                      ": compute_mode \"emulated\" without an emulated_compute object");
  auto ms = [&](const char* key) {
    const JsonValue* v = e->find(key);
    if (!v || v->kind != JsonValue::Kind::number || !(v->number() >= 0))
      throw ConfigError(summary_path + ": emulated_compute: key '" + key +
                        "': expected a number >= 0 (milliseconds)");
    return v->number();
  };
  const double micro = ms("micro_step_ms"), opt = ms("optimizer_ms");
  const JsonValue* src = e->find("source");
  out->micro_step_s = micro * 1e-3;
  out->optimizer_s = opt * 1e-3;
  out->source = "emulated compute stated in " + summary_path;
  char buf[128];
  std::snprintf(buf, sizeof buf, "emulated compute (stated: micro-step %.6g ms, optimizer %.6g ms)",
                micro, opt);
  *label = buf;
  if (src && src->kind == JsonValue::Kind::string && !src->text.empty()) *label += "; " + src->text;
  return true;
}

ComputeChoice choose_compute(const RunsDir& runs, const ReportRow& row, const std::string& runs_dir,
                             const std::string& compute_from) {
  ComputeChoice c;
  if (!compute_from.empty()) {
    c.times = read_compute_times(compute_from);
    c.label = "compute from " + compute_from + " (--compute-from)";
    return c;
  }
  const std::string own = runs_dir + "/" + row.run + "/summary.json";
  if (stated_emulated_compute(own, &c.times, &c.label)) return c;
  const ReportRow* ref = nullptr;
  for (const ReportRow& r : runs.rows) {
    if (r.stage != 0 || r.micro_batch != row.micro_batch || r.device != row.device ||
        r.params != row.params || r.seq_len != row.seq_len)
      continue;
    if (!ref || (ref->world != row.world && r.world == row.world)) ref = &r;
  }
  if (ref && ref->run != row.run) {
    c.times = read_compute_times(runs_dir + "/" + ref->run + "/summary.json");
    c.label = "compute from run " + ref->run;
    return c;
  }
  c.times = read_compute_times(own);
  c.label = ref ? "own compute (not a prediction of compute): the reference run itself"
                : "own compute (not a prediction of compute): no stage-0 run with micro-batch " +
                      std::to_string(row.micro_batch);
  return c;
}

bool predict_grid_run(const Config& cfg, int world, int ranks_per_node, int accum,
                      const NetworkModel& net, const ComputeChoice& compute,
                      const GridGroupCurves& curves, GridStepPrediction* out, std::string* why) {
  if (!net.curves.empty())
    *why = "the grid model reads link figures (a preset or an emulated cluster), not curves";
  else if (cfg.parallel.tensor > 1 && cfg.parallel.rank_order != "tensor-inner")
    *why = "the grid model places the tensor group innermost, not " + cfg.parallel.rank_order;
  else if (compute.label.rfind("own compute", 0) == 0)
    *why =
        "a grid run's own compute is a stage's or a shard's; give --compute-from a run of the "
        "whole model";
  if (!why->empty()) return false;
  GridRun run;
  run.zero_stage = cfg.zero.stage;
  run.gradient_reduce = select_grad_path(cfg.zero).primitive;
  run.schedule = parse_pipeline_schedule(cfg.parallel.pipeline_schedule);
  run.dtype = cfg.system.device == "cuda" ? DType::BF16 : DType::F32;
  run.grid.tp = cfg.parallel.tensor;
  run.grid.pp = cfg.parallel.pipeline;
  run.grid.dp = world / (run.grid.tp * run.grid.pp);
  run.grid.micro_batches = accum;
  run.grid.micro_batch = cfg.train.micro_batch;
  run.grid.seq = cfg.model.seq_len;
  run.grid.sequence_parallel = cfg.parallel.sequence_parallel;
  GridShape whole = run.grid;
  whole.tp = whole.pp = 1;
  whole.sequence_parallel = false;
  GridCluster k;
  k.gpus_per_node = ranks_per_node;
  k.nodes = world / ranks_per_node;
  k.link = net.link;
  k.flops_per_s = stage_flops_per_token(cfg.model, whole, 0) * static_cast<double>(whole.tokens()) /
                  compute.times.micro_step_s;
  k.memory_bytes_per_s =
      32.0 * static_cast<double>(ParamTable(cfg.model).total()) / compute.times.optimizer_s;
  k.device_memory_bytes = 1e300;
  k.tensor_curves = curves.tensor;
  k.data_curves = curves.data;
  *out = predict_grid_step(cfg.model, run, k);
  return true;
}

void predict_rows(RunsDir& runs, const std::string& runs_dir, const NetworkModel* network,
                  const std::string& compute_from, const std::vector<NetworkModel>& tensor_curves,
                  const std::vector<NetworkModel>& data_curves) {
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
      if (cfg.parallel.tensor > 1 || cfg.parallel.pipeline > 1) {
        const ComputeChoice compute = choose_compute(runs, r, runs_dir, compute_from);
        GridStepPrediction p;
        std::string why;
        r.network = net.source;
        const int T = cfg.parallel.tensor, D = r.world / (T * cfg.parallel.pipeline);
        const NetworkModel* measured =
            T > 1 ? group_curves_for(tensor_curves, r.world, g, T, 1) : nullptr;
        const NetworkModel* data =
            D > 1 ? group_curves_for(data_curves, r.world, g, D, T) : nullptr;
        GridGroupCurves curves;
        if (measured) curves.tensor = measured->curves;
        if (data) curves.data = data->curves;
        bool predicted = false;
        try {
          predicted = predict_grid_run(cfg, r.world, g, A, net, compute, curves, &p, &why);
        } catch (const std::invalid_argument& e) {
          const std::string what = e.what();
          const std::string file = what.rfind("data", 0) == 0 && data
                                       ? "--data-curves " + data->source + ": "
                                   : measured ? "--tensor-curves " + measured->source + ": "
                                              : "";
          throw ConfigError(file + what);
        }
        if (!predicted) {
          r.compute_source = "no prediction: " + why;
          continue;
        }
        r.compute_source = compute.label + "; grid step-time model (gradients by " +
                           primitive_name(select_grad_path(cfg.zero).primitive) +
                           ", the run's path; zero/analysis/grid_step_time.h)";
        if (T > 1)
          r.compute_source +=
              measured ? "; tensor calls " + measured->source : "; tensor calls by the link rule";
        if (D > 1)
          r.compute_source += data ? "; data-parallel calls " + data->source
                                   : "; data-parallel calls by the link rule";
        r.has_prediction = true;
        r.predicted_step_ms = p.step_s * 1e3;
        r.predicted_exposed_ms = (p.tensor_s + p.pipeline_s + p.data_exposed_s) * 1e3;
        continue;
      }
      const ZeroSetup setup = zero_setup(cfg, table, g);
      const std::string mismatch = network_layout_mismatch(net, r.world, g);
      if (!mismatch.empty()) throw ConfigError("--network: " + mismatch);
      const NodeMap nodes = NodeMap::uniform(r.world, g);
      const StepPlan plan = plan_step(setup, table, r.world, A, t, nodes);
      const ComputeChoice compute = choose_compute(runs, r, runs_dir, compute_from);
      const StepTimePrediction p = predict_step(plan, r.world, A, nodes, net, compute.times);
      r.compute_source = compute.label;
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
