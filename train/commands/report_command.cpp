// `zerotrain report RUNS_DIR [--out DIR] [--no-plots]`: gathers every
// RUNS_DIR/*/summary.json (one per sweep point) into DIR/report.csv and
// DIR/report.md (DIR defaults to RUNS_DIR), then draws DIR/throughput.png and
// DIR/bytes_per_primitive.png with scripts/plot_report.py when /usr/bin/python3
// has matplotlib; report.md embeds the plots or says why there are none.
// Only rank 0 works when launched under mpirun.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/commands/portability_report.h"
#include "train/commands/report_plots.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/io/output_target.h"
#include "train/loop/runtime.h"
#include "train/report/report_prediction.h"
#include "train/report/report_table.h"
#include "train/report/sitting_report.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string runs_dir, out_dir, network, compute_from;
  std::vector<std::string> tensor_curves, data_curves;
  bool plots = true;
};

ReportArgs parse_report_args(const std::vector<std::string>& args) {
  const CliArgs f = command_args("report", args);
  ReportArgs a;
  if (f.positional().size() > 1) f.fail("more than one RUNS_DIR needs --portability");
  if (f.has("--project")) f.fail("--project adds a system to --portability, which is not given");
  a.runs_dir = f.positional()[0];
  a.out_dir = f.get("--out", a.runs_dir);
  a.plots = !f.has("--no-plots");
  a.network = f.get("--network");
  a.compute_from = f.get("--compute-from");
  a.tensor_curves = f.all("--tensor-curves");
  a.data_curves = f.all("--data-curves");
  if (const std::string problem = output_dir_problem(a.out_dir); !problem.empty())
    f.fail((f.has("--out") ? "--out " : "RUNS_DIR (the default --out) ") + a.out_dir + ": " +
           problem);
  return a;
}

// Draws the plots; returns the Markdown section that shows them or says why not.
std::string plots_section(const ReportArgs& a, const fs::path& csv) {
  const char* names[] = {"throughput.png", "bytes_per_primitive.png", "predicted_vs_measured.png"};
  for (const char* n : names) fs::remove(fs::path(a.out_dir) / n);  // never show stale plots
  std::string script;
  const std::string skipped = plots_unavailable(a.plots, "plot_report.py", &script);
  std::string md = "## Plots\n\n";
  if (!skipped.empty()) {
    std::printf("report: plots skipped: %s\n", skipped.c_str());
    return md + "Plots skipped: " + skipped + ". report.csv holds every number.\n";
  }
  const int rc = run_program({kPlotPython, script, csv.string(), a.out_dir}, false);
  if (rc != 0) {
    std::printf("report: plots failed: %s exited with status %d\n", script.c_str(), rc);
    return md + "Plots failed: " + script + " exited with status " + std::to_string(rc) +
           " (its message went to stderr). report.csv holds every number.\n";
  }
  return md +
         "Tokens per second per configuration (bar colour: ZeRO stage, keyed beside the plot; in "
         "brackets: speed-up (tokens/s) vs DS default):\n\n"
         "![tok/s per configuration](throughput.png)\n\n" +
         "Bus bytes per rank per step, stacked by primitive (gradients, and the parameter "
         "all-gather; norm all-reduce excluded):\n\n"
         "![bus bytes per primitive per configuration](bytes_per_primitive.png)\n" +
         (fs::exists(fs::path(a.out_dir) / "predicted_vs_measured.png")
              ? "\nStep time predicted by the step-time model against measured, per run "
                "(colour: ZeRO stage, keyed in the plot):\n\n"
                "![predicted against measured step time](predicted_vs_measured.png)\n"
              : "");
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("report: " + path.string() + ": cannot write");
}

std::string markdown_document(const ReportArgs& a, const RunsDir& runs, const std::string& sittings,
                              const std::string& plots) {
  std::string md = "# zerotrain report\n\n" + std::to_string(runs.rows.size()) + " runs from `" +
                   a.runs_dir + "` (every `RUN/summary.json`).\n\n" + sittings;
  md += report_markdown_table(runs.rows) + "\n" + report_caption() + "\n\n";
  bool predicted = false;
  for (const ReportRow& r : runs.rows) predicted = predicted || r.has_prediction;
  if (predicted) {
    md +=
        "## Measured against the step-time model\n\n"
        "Predicted by the step-time model (docs/step_time_model.md) from each run's "
        "own config and node layout, the compute named in its last column (one reference per "
        "system: --compute-from, the run's stated emulated compute, or the stage-0 run of the "
        "same micro-batch) and the network: " +
        (a.network.empty() ? std::string("each run's recorded emulated cluster (its link)")
                           : "`" + a.network + "`") +
        ". Speed-ups here are speed-ups (median step): the DeepSpeed-default run's median step "
        "over this run's, measured and predicted alike, because the model predicts one typical "
        "step. The table above shows speed-ups (tokens/s), which a stalled step lowers, so the "
        "two can differ for the same pair of runs.\n\n" +
        report_prediction_table(runs.rows) + "\n";
  }
  if (!runs.without_summary.empty()) {
    md += "Directories without summary.json (failed, unfinished or not runs):";
    for (const std::string& d : runs.without_summary) md += " `" + d + "`";
    md += ".\n\n";
  }
  return md + plots;
}

}  // namespace

int run_report_command(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--portability") != args.end())
    return run_portability_report(args);
  const ReportArgs a = parse_report_args(args);
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  if (rank != 0) return 0;
  try {
    NetworkModel network;
    if (!a.network.empty()) network = read_network_file(a.network);
    auto read_curves = [](const std::vector<std::string>& paths, const std::string& option) {
      std::vector<NetworkModel> files;
      for (const std::string& path : paths) {
        files.push_back(read_network_file(path));
        if (files.back().measured_group_size == 0)
          throw ConfigError(option + " " + path +
                            ": not commbench's JSON (expected curves measured with --group-size)");
      }
      return files;
    };
    const std::vector<NetworkModel> tensor_curves = read_curves(a.tensor_curves, "--tensor-curves");
    const std::vector<NetworkModel> data_curves = read_curves(a.data_curves, "--data-curves");
    // RUNS_DIR/sitting-K/RUN: scripts/sweep.sh --repeat's sittings, compared within each.
    SittingSet sittings;
    const bool repeated = is_sitting_set(a.runs_dir);
    RunsDir runs = repeated ? load_sitting_set(a.runs_dir, sittings) : load_runs_dir(a.runs_dir);
    predict_rows(runs, a.runs_dir, a.network.empty() ? nullptr : &network, a.compute_from,
                 tensor_curves, data_curves);
    std::error_code ec;
    fs::create_directories(a.out_dir, ec);
    if (ec) throw std::runtime_error("report: " + a.out_dir + ": cannot create: " + ec.message());
    const fs::path csv = fs::path(a.out_dir) / "report.csv";
    write_file(csv, repeated ? sitting_csv(runs, sittings) : report_csv(runs.rows));
    const fs::path md = fs::path(a.out_dir) / "report.md";
    write_file(md, markdown_document(a, runs, repeated ? sitting_markdown(runs, sittings) : "",
                                     plots_section(a, csv)));
    for (const std::string& m : sittings.missing) std::printf("report: %s\n", m.c_str());
    std::printf("report: %zu runs -> %s, %s\n", runs.rows.size(), md.string().c_str(),
                csv.string().c_str());
    if (!runs.without_summary.empty())
      std::printf("report: %zu directories without summary.json left out\n",
                  runs.without_summary.size());
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "zerotrain: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace zt
