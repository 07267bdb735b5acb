// `zerotrain report RUNS_DIR [--out DIR] [--no-plots]`: gathers every
// RUNS_DIR/*/summary.json (one per sweep point) into DIR/report.csv and
// DIR/report.md (DIR defaults to RUNS_DIR), then draws DIR/throughput.png and
// DIR/bytes_per_primitive.png with scripts/plot_report.py when /usr/bin/python3
// has matplotlib; report.md embeds the plots or says why there are none.
// Only rank 0 works when launched under mpirun.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "train/cli/command_registry.h"
#include "train/cli/commands.h"
#include "train/config/config.h"
#include "train/config/network_file.h"
#include "train/io/output_target.h"
#include "train/loop/runtime.h"
#include "train/report/report_prediction.h"
#include "train/report/report_table.h"

extern char** environ;

namespace zt {
namespace {

namespace fs = std::filesystem;

const char* kPython = "/usr/bin/python3";

struct ReportArgs {
  std::string runs_dir, out_dir, network, compute_from;
  bool plots = true;
};

ReportArgs parse_report_args(const std::vector<std::string>& args) {
  const CliArgs f = command_args("report", args);
  ReportArgs a;
  a.runs_dir = f.positional()[0];
  a.out_dir = f.get("--out", a.runs_dir);
  a.plots = !f.has("--no-plots");
  a.network = f.get("--network");
  a.compute_from = f.get("--compute-from");
  if (const std::string problem = output_dir_problem(a.out_dir); !problem.empty())
    f.fail((f.has("--out") ? "--out " : "RUNS_DIR (the default --out) ") + a.out_dir + ": " +
           problem);
  return a;
}

// Runs a program and returns its exit status (-1: could not start or killed).
// posix_spawn rather than system(): no shell sees the paths.
int run_program(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int err = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// scripts/plot_report.py under the current directory, else beside the binary
// (BIN/../scripts), so that an installed build finds it from anywhere.
std::string find_plot_script() {
  const fs::path rel = fs::path("scripts") / "plot_report.py";
  if (fs::exists(rel)) return rel.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / rel;
    if (fs::exists(beside)) return beside.string();
  }
  return "";
}

// Draws the plots; returns the Markdown section that shows them or says why not.
std::string plots_section(const ReportArgs& a, const fs::path& csv) {
  const char* names[] = {"throughput.png", "bytes_per_primitive.png", "predicted_vs_measured.png"};
  for (const char* n : names) fs::remove(fs::path(a.out_dir) / n);  // never show stale plots
  std::string skipped;
  std::string script;
  if (!a.plots) {
    skipped = "--no-plots was given";
  } else if (access(kPython, X_OK) != 0) {
    skipped = std::string(kPython) + " not found";
  } else if (run_program({kPython, "-c", "import matplotlib"}, true) != 0) {
    skipped = std::string(kPython) + " has no matplotlib (`import matplotlib` failed)";
  } else if ((script = find_plot_script()).empty()) {
    skipped =
        "scripts/plot_report.py not found (looked under the current directory and beside the "
        "binary)";
  }
  std::string md = "## Plots\n\n";
  if (!skipped.empty()) {
    std::printf("report: plots skipped: %s\n", skipped.c_str());
    return md + "Plots skipped: " + skipped + ". report.csv holds every number.\n";
  }
  const int rc = run_program({kPython, script, csv.string(), a.out_dir}, false);
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

std::string markdown_document(const ReportArgs& a, const RunsDir& runs, const std::string& plots) {
  std::string md = "# zerotrain report\n\n" + std::to_string(runs.rows.size()) + " runs from `" +
                   a.runs_dir + "` (every `RUN/summary.json`).\n\n";
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
  const ReportArgs a = parse_report_args(args);
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  if (rank != 0) return 0;
  try {
    NetworkModel network;
    if (!a.network.empty()) network = read_network_file(a.network);
    RunsDir runs = load_runs_dir(a.runs_dir);
    predict_rows(runs, a.runs_dir, a.network.empty() ? nullptr : &network, a.compute_from);
    std::error_code ec;
    fs::create_directories(a.out_dir, ec);
    if (ec) throw std::runtime_error("report: " + a.out_dir + ": cannot create: " + ec.message());
    const fs::path csv = fs::path(a.out_dir) / "report.csv";
    write_file(csv, report_csv(runs.rows));
    const fs::path md = fs::path(a.out_dir) / "report.md";
    write_file(md, markdown_document(a, runs, plots_section(a, csv)));
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
