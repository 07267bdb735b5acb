#include "train/report/report_table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <tuple>

#include "train/report/summary_file.h"
#include "train/report/table_text.h"
#include "zero/comm/comm_stats.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// One purpose's bytes per step under one primitive (summary.json splits them:
// gradients, parameters, scalars such as norms).
PrimitiveBytes per_step(const SummaryFile& s, const std::string& purpose,
                        const std::string& primitive) {
  const std::string k = "comm.per_step_by_purpose." + purpose + "." + primitive;
  return {s.number(k + ".bytes"), s.number(k + ".bus_bytes"),
          s.number(k + ".inter_node_bus_bytes")};
}

// Dimension d's bus bytes per step over every primitive (and their inter-node part).
void dimension_bytes(const SummaryFile& s, Dimension d, double* bus, double* inter_node) {
  for (int p = 0; p < static_cast<int>(Primitive::kCount); p++) {
    const std::string k = std::string("comm.per_step_by_dimension.") + dimension_name(d) + "." +
                          primitive_name(static_cast<Primitive>(p));
    if (!s.has(k)) continue;
    *bus += s.number(k + ".bus_bytes");
    *inter_node += s.number(k + ".inter_node_bus_bytes");
  }
}

// ---- Ordering and baselines.

// Whether the run's own path switches (those a summary lacks at DeepSpeed's
// defaults) select DeepSpeed's default path, and the run reports that path.
bool is_deepspeed_default_path(const SummaryFile& s, const ReportRow& r) {
  ZeroConfig z;
  z.stage = r.stage;
  for (const char* key : {"reduce_scatter", "use_multi_rank_bucket_allreduce",
                          "contiguous_gradients", "native_reduce_scatter"}) {
    const std::string k = std::string("config.zero.") + key;
    if (s.has(k)) apply_change(z, {key, s.boolean(k) ? "true" : "false"});
  }
  const GradPathRow& row = select_grad_path(z);
  return row.deepspeed_default && row.key == r.grad_path;
}

int path_rank(const std::string& path) {
  static const char* order[] = {"allreduce", "allreduce_fallback", "multi_rank_allreduce",
                                "per_owner_reduce", "reduce_scatter"};
  for (int i = 0; i < 5; i++)
    if (path == order[i]) return i;
  return 5;
}

// Everything but the gradient path: runs that agree here are comparable.
auto settings_key(const ReportRow& r) {
  return std::make_tuple(r.stage, r.reduce_bucket_size, r.overlap_comm, r.micro_batch,
                         r.accum_steps, r.world, r.params, r.seq_len, r.device);
}

// The inter-node bus bytes of the gradient and parameter calls the table shows.
double inter_node(const ReportRow& r) {
  return r.grad_all_reduce.inter + r.grad_reduce.inter + r.grad_reduce_scatter.inter +
         r.grad_all_to_all.inter + r.param_all_gather.inter;
}

// ---- Formatting.

// Three significant figures in B, kB, MB or GB (powers of 1000, as nccl-tests).
std::string human_bytes(double b) {
  if (b == 0) return "0";
  static const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (std::fabs(b) >= 999.5 && u < 4) {
    b /= 1000;
    u++;
  }
  const char* f = u == 0 || std::fabs(b) >= 99.5 ? "%.0f "
                  : std::fabs(b) >= 9.995        ? "%.1f "
                                                 : "%.2f ";
  return fmt(f, b) + units[u];
}

// 500000000 -> "5e8"; sizes that are not one digit times a power of ten stay whole.
std::string bucket_label(int64_t n) {
  int exponent = 0;
  int64_t m = n;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    exponent++;
  }
  if (m < 10 && exponent >= 3) return std::to_string(m) + "e" + std::to_string(exponent);
  return std::to_string(n);
}

}  // namespace

std::string path_label(const ReportRow& r) {
  return r.grad_path + (r.zeropp.empty() ? "" : " + " + r.zeropp) +
         (r.offload.empty() ? "" : " + offload " + r.offload);
}

double flops_per_token(int64_t params, int n_layer, int n_embd, int seq_len) {
  return 6.0 * static_cast<double>(params) +
         6.0 * n_layer * static_cast<double>(n_embd) * static_cast<double>(seq_len);
}

ReportRow read_summary(const std::string& path, const std::string& run_name) {
  const SummaryFile s(path);
  ReportRow r;
  r.run = run_name;
  r.device = s.string("device");
  // An emulated run's compute was waited for, not done: its device says so
  // wherever rows are shown (tables, CSV, plots).
  r.emulated = s.has("compute_mode") && s.string("compute_mode") == "emulated";
  if (r.emulated) r.device += " (compute emulated)";
  r.world = static_cast<int>(s.integer("world_size"));
  if (r.world < 1) s.fail("key 'world_size': expected at least 1");
  // select_grad_path knows stages 0-3 only (any other is its logic_error).
  const int64_t stage = s.integer("zero.stage");
  if (stage < 0 || stage > 3)
    s.fail("key 'zero.stage': expected 0, 1, 2 or 3, got " + std::to_string(stage));
  r.stage = static_cast<int>(stage);
  r.grad_path = s.string("zero.grad_path");
  r.reduce_bucket_size = s.integer("zero.reduce_bucket_size");
  r.overlap_comm = s.boolean("zero.overlap_comm");
  r.reduce_scatter = s.boolean("config.zero.reduce_scatter");
  if (r.stage == 3 && s.has("config.zero.zero_hpz_partition_size")) {
    std::vector<std::string> parts;
    const int64_t hpz = s.integer("config.zero.zero_hpz_partition_size");
    if (hpz > 1) parts.push_back("hpZ " + std::to_string(hpz));
    if (s.boolean("config.zero.zero_quantized_weights")) parts.push_back("qwZ");
    if (s.boolean("config.zero.zero_quantized_gradients")) parts.push_back("qgZ");
    for (const std::string& p : parts) r.zeropp += (r.zeropp.empty() ? "" : " + ") + p;
  }
  for (const char* what : {"optimizer", "param"}) {
    const std::string key = std::string("memory.offload_") + what;
    const std::string device = s.has(key) ? s.string(key) : "none";
    if (device != "none")
      r.offload += (r.offload.empty() ? "" : " + ") +
                   std::string(what == std::string("param") ? "params " : "optimizer ") + device;
  }
  r.deepspeed_default = r.offload.empty() && r.zeropp.empty() && is_deepspeed_default_path(s, r);
  r.micro_batch = static_cast<int>(s.integer("config.train.micro_batch"));
  r.n_layer = static_cast<int>(s.integer("config.model.n_layer"));
  r.n_embd = static_cast<int>(s.integer("config.model.n_embd"));
  r.seq_len = static_cast<int>(s.integer("config.model.seq_len"));
  const int64_t global_tokens = s.integer("config.train.global_batch_tokens");
  // The data-parallel ranks share the batch; a tensor or pipeline group's
  // ranks work on the same micro-batches.
  const int64_t model_parallel =
      (s.has("config.parallel.tensor") ? s.integer("config.parallel.tensor") : 1) *
      (s.has("config.parallel.pipeline") ? s.integer("config.parallel.pipeline") : 1);
  if (model_parallel <= 0 || r.world % model_parallel != 0)
    s.fail("config.parallel: tensor x pipeline " + std::to_string(model_parallel) +
           " does not divide world_size " + std::to_string(r.world));
  const int64_t per_micro_step = int64_t(r.micro_batch) * r.seq_len * (r.world / model_parallel);
  if (per_micro_step <= 0 || global_tokens % per_micro_step != 0)
    s.fail("config.train.global_batch_tokens " + std::to_string(global_tokens) +
           " is not a multiple of micro_batch x seq_len x data-parallel ranks");
  r.accum_steps = static_cast<int>(global_tokens / per_micro_step);
  r.params = s.integer("params");

  r.tokens_per_second = s.number("tokens_per_second");
  r.tflops_per_gpu = r.tokens_per_second *
                     flops_per_token(r.params, r.n_layer, r.n_embd, r.seq_len) / r.world / 1e12;
  r.step_ms = s.number("step_ms_median");
  r.exposed_comm_ms_per_step = s.number("comm.exposed_seconds_per_step") * 1e3;
  r.grad_all_reduce = per_step(s, "gradients", "all_reduce");
  r.grad_reduce = per_step(s, "gradients", "reduce");
  r.grad_reduce_scatter = per_step(s, "gradients", "reduce_scatter");
  if (s.has("comm.per_step_by_purpose.gradients.all_to_all"))
    r.grad_all_to_all = per_step(s, "gradients", "all_to_all");
  r.param_all_gather = per_step(s, "parameters", "all_gather");
  for (int d = 0; d < static_cast<int>(Dimension::kCount); d++)
    dimension_bytes(s, static_cast<Dimension>(d), &r.dimension_bus[d], &r.dimension_inter_node[d]);
  r.model_states_bytes = s.number("memory.model_states");
  r.peak_total_bytes = s.number("memory.peak_total");
  return r;
}

void fill_speedups(std::vector<ReportRow>& rows) {
  std::map<decltype(settings_key(rows.front())), size_t> baseline_of;
  for (size_t i = 0; i < rows.size(); i++)
    if (rows[i].deepspeed_default) baseline_of.emplace(settings_key(rows[i]), i);
  for (ReportRow& r : rows) {
    const auto it = baseline_of.find(settings_key(r));
    r.has_baseline = it != baseline_of.end() && rows[it->second].tokens_per_second > 0;
    r.speedup = r.has_baseline ? r.tokens_per_second / rows[it->second].tokens_per_second : 0;
    r.baseline_run = r.has_baseline ? rows[it->second].run : "";
  }
}

RunsDir load_runs_dir(const std::string& runs_dir) {
  std::error_code ec;
  if (!fs::is_directory(runs_dir, ec))
    throw std::runtime_error("report: " + runs_dir + ": not a directory");
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(runs_dir, ec)) {
    std::error_code entry_ec;
    if (e.is_directory(entry_ec)) dirs.push_back(e.path());
  }
  if (ec) throw std::runtime_error("report: " + runs_dir + ": cannot list: " + ec.message());
  std::sort(dirs.begin(), dirs.end());

  RunsDir out;
  for (const fs::path& d : dirs) {
    const fs::path summary = d / "summary.json";
    if (fs::exists(summary))
      out.rows.push_back(read_summary(summary.string(), d.filename().string()));
    else out.without_summary.push_back(d.filename().string());
  }
  if (out.rows.empty())
    throw std::runtime_error(
        "report: no summary.json in any subdirectory of " + runs_dir +
        " (expected RUNS_DIR/RUN/summary.json, as scripts/sweep.sh --out writes)");
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const ReportRow& a, const ReportRow& b) {
    return std::make_tuple(a.stage, path_rank(a.grad_path), a.grad_path, !a.reduce_scatter,
                           a.zeropp, a.offload, a.reduce_bucket_size, a.overlap_comm, a.micro_batch,
                           a.world, a.run) <
           std::make_tuple(b.stage, path_rank(b.grad_path), b.grad_path, !b.reduce_scatter,
                           b.zeropp, b.offload, b.reduce_bucket_size, b.overlap_comm, b.micro_batch,
                           b.world, b.run);
  });
  fill_speedups(out.rows);
  return out;
}

// Column names stay as they were, since scripts and committed reports read
// them: speedup_vs_ds_default is the speed-up (tokens/s);
// step_speedup_vs_ds_default and predicted_speedup_vs_ds_default are speed-ups
// (median step), measured and predicted (docs/commands/report.md).
std::string report_csv(const std::vector<ReportRow>& rows, const CsvColumns* extra) {
  std::string s =
      "run,device,stage,grad_path,reduce_bucket_size,overlap_comm,micro_batch,accum_steps,world,"
      "params,tokens_per_second,tflops_per_gpu,step_ms,exposed_comm_ms_per_step,"
      "grad_all_reduce_bytes,grad_all_reduce_bus_bytes,grad_reduce_bytes,grad_reduce_bus_bytes,"
      "grad_reduce_scatter_bytes,grad_reduce_scatter_bus_bytes,param_all_gather_bytes,"
      "param_all_gather_bus_bytes,inter_node_bus_bytes,model_states_bytes,peak_total_bytes,"
      "speedup_vs_ds_default,"
      "baseline_run,predicted_step_ms,predicted_exposed_comm_ms,predicted_speedup_vs_ds_default,"
      "step_speedup_vs_ds_default,zeropp,grad_all_to_all_bytes,grad_all_to_all_bus_bytes,"
      "offload,prediction_compute_source,data_bus_bytes,data_inter_node_bus_bytes,"
      "tensor_bus_bytes,tensor_inter_node_bus_bytes,pipeline_bus_bytes,"
      "pipeline_inter_node_bus_bytes" +
      (extra ? "," + extra->header : std::string()) + "\n";
  for (size_t row = 0; row < rows.size(); row++) {
    const ReportRow& r = rows[row];
    const std::vector<std::string> f = {csv_field(r.run),
                                        csv_field(r.device),
                                        std::to_string(r.stage),
                                        csv_field(r.grad_path),
                                        std::to_string(r.reduce_bucket_size),
                                        r.overlap_comm ? "true" : "false",
                                        std::to_string(r.micro_batch),
                                        std::to_string(r.accum_steps),
                                        std::to_string(r.world),
                                        std::to_string(r.params),
                                        g12(r.tokens_per_second),
                                        g12(r.tflops_per_gpu),
                                        g12(r.step_ms),
                                        g12(r.exposed_comm_ms_per_step),
                                        g12(r.grad_all_reduce.payload),
                                        g12(r.grad_all_reduce.bus),
                                        g12(r.grad_reduce.payload),
                                        g12(r.grad_reduce.bus),
                                        g12(r.grad_reduce_scatter.payload),
                                        g12(r.grad_reduce_scatter.bus),
                                        g12(r.param_all_gather.payload),
                                        g12(r.param_all_gather.bus),
                                        g12(inter_node(r)),
                                        g12(r.model_states_bytes),
                                        g12(r.peak_total_bytes),
                                        r.has_baseline ? g12(r.speedup) : "",
                                        csv_field(r.baseline_run),
                                        r.has_prediction ? g12(r.predicted_step_ms) : "",
                                        r.has_prediction ? g12(r.predicted_exposed_ms) : "",
                                        r.predicted_speedup > 0 ? g12(r.predicted_speedup) : "",
                                        r.step_speedup > 0 ? g12(r.step_speedup) : "",
                                        csv_field(r.zeropp),
                                        g12(r.grad_all_to_all.payload),
                                        g12(r.grad_all_to_all.bus),
                                        csv_field(r.offload),
                                        csv_field(r.compute_source),
                                        g12(r.dimension_bus[0]),
                                        g12(r.dimension_inter_node[0]),
                                        g12(r.dimension_bus[1]),
                                        g12(r.dimension_inter_node[1]),
                                        g12(r.dimension_bus[2]),
                                        g12(r.dimension_inter_node[2])};
    for (size_t i = 0; i < f.size(); i++) s += (i ? "," : "") + f[i];
    if (extra) s += "," + extra->fields.at(row);
    s += "\n";
  }
  return s;
}

std::string report_markdown_table(const std::vector<ReportRow>& rows) {
  std::string s =
      "| run | stage | grad path | bucket | overlap | micro-batch | accum | world | tok/s | "
      "TFLOP/s per GPU | step ms | exposed comm ms/step | grad all_reduce | grad reduce | "
      "grad reduce_scatter | grad all_to_all | param all_gather | of which inter-node | model "
      "states | peak total | speed-up (tokens/s) vs DS default |\n"
      "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
      "---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ReportRow& r : rows) {
    std::string path = path_label(r);
    if (r.stage > 0 && r.deepspeed_default) path += " (DS default)";
    const std::vector<std::string> f = {r.emulated ? r.run + " (compute emulated)" : r.run,
                                        std::to_string(r.stage),
                                        path,
                                        bucket_label(r.reduce_bucket_size),
                                        r.overlap_comm ? "on" : "off",
                                        std::to_string(r.micro_batch),
                                        std::to_string(r.accum_steps),
                                        std::to_string(r.world),
                                        fmt("%.0f", r.tokens_per_second),
                                        fmt("%.3g", r.tflops_per_gpu),
                                        fmt("%.1f", r.step_ms),
                                        fmt("%.2f", r.exposed_comm_ms_per_step),
                                        human_bytes(r.grad_all_reduce.bus),
                                        human_bytes(r.grad_reduce.bus),
                                        human_bytes(r.grad_reduce_scatter.bus),
                                        human_bytes(r.grad_all_to_all.bus),
                                        human_bytes(r.param_all_gather.bus),
                                        human_bytes(inter_node(r)),
                                        human_bytes(r.model_states_bytes),
                                        human_bytes(r.peak_total_bytes),
                                        r.has_baseline ? fmt("%.2fx", r.speedup) : "—"};
    s += markdown_row(f);
  }
  return s;
}

std::string report_prediction_table(const std::vector<ReportRow>& rows) {
  std::string s =
      "| run | stage | grad path | step ms measured | step ms predicted | predicted / measured | "
      "exposed comm ms measured | exposed comm ms predicted | speed-up (median step) measured | "
      "speed-up (median step) predicted | compute of the prediction |\n"
      "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  for (const ReportRow& r : rows) {
    if (!r.has_prediction && r.compute_source.empty()) continue;
    const bool p = r.has_prediction;  // else compute_source says why not
    const std::vector<std::string> f = {
        r.run,
        std::to_string(r.stage),
        path_label(r),
        fmt("%.1f", r.step_ms),
        p ? fmt("%.1f", r.predicted_step_ms) : "—",
        p ? fmt("%.2f", r.predicted_step_ms / r.step_ms) : "—",
        fmt("%.1f", r.exposed_comm_ms_per_step),
        p ? fmt("%.1f", r.predicted_exposed_ms) : "—",
        r.step_speedup > 0 ? fmt("%.2fx", r.step_speedup) : "—",
        r.predicted_speedup > 0 ? fmt("%.2fx", r.predicted_speedup) : "—",
        r.compute_source};
    s += markdown_row(f);
  }
  return s;
}

std::string report_caption() {
  return "Per rank, per optimizer step. **tok/s**: tokens of the global batch per second "
         "(first step excluded). **TFLOP/s per GPU** (per rank on CPUs): tok/s × (6·N + 6·L·C·T) "
         "/ W / 10¹², with N parameters, L layers, C the width, T the sequence length and W the "
         "ranks: 6N for the matmuls forward and backward, 6·L·C·T for attention scores and "
         "weighted values under the causal mask. **step ms**: median. **exposed comm**: time "
         "blocked waiting for collectives. **grad all_reduce / reduce / reduce_scatter**: "
         "gradient bus bytes (nccl-tests: payload × 2(W−1)/W for all-reduce, × (W−1)/W for "
         "reduce-scatter and all-gather, × 1 for reduce); the one 4-byte fp32 all-reduce of the "
         "squared gradient norm that stages 1–3 issue per step is subtracted from all_reduce "
         "(4 B payload, 4·2(W−1)/W B bus; stage 0 takes the norm locally). **param all_gather**: "
         "bus bytes of the parameter all-gathers. **of which inter-node**: the part of those "
         "gradient and parameter bus bytes sent to another node (a ring in rank order; the "
         "mean over the ranks; 0 on one node), the rest stays inside a node. report.csv has "
         "the payload bytes as well. "
         "**model states**: parameters, gradients and optimizer state held per rank; **peak "
         "total**: the allocator's peak of everything. **speed-up (tokens/s)**: tok/s over the "
         "run with DeepSpeed's default path of the same stage, bucket, overlap, micro-batch, "
         "accumulation, world and model (stages 1/2: multi_rank_allreduce; stage 3: "
         "reduce_scatter true; stage 0: its only path); — where no such run is in the "
         "directory. The step-time model's table, when there is one, shows **speed-up (median "
         "step)** instead: the same baseline's median step over the run's.";
}

}  // namespace zt
