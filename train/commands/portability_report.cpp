// Writes DIR/report_portability.csv and DIR/report_portability.md (DIR: --out,
// default the first RUNS_DIR), then draws DIR/portability_cascade_*.png with
// scripts/plot_portability.py when /usr/bin/python3 has matplotlib. Only rank
// 0 works when launched under mpirun.
#include "train/commands/portability_report.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "train/cli/command_registry.h"
#include "train/commands/report_plots.h"
#include "train/config/config.h"
#include "train/io/atomic_file.h"
#include "train/io/host_identity.h"
#include "train/io/output_target.h"
#include "train/loop/runtime.h"
#include "train/report/portability_peaks.h"
#include "train/report/portability_projection.h"
#include "train/report/portability_tables.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const char* const kCascadePlots[] = {"portability_cascade_application.png",
                                     "portability_cascade_architectural.png"};

struct PortabilityArgs {
  std::vector<std::string> runs_dirs;
  std::vector<ProjectedCluster> projections;
  std::string out_dir;
  bool plots = true;
};

PortabilityArgs parse_portability_args(const std::vector<std::string>& args) {
  const CliArgs f = command_args("report", args);
  if (f.has("--network"))
    f.fail("--network predicts step times of one run set; it does not apply to --portability");
  PortabilityArgs a;
  a.runs_dirs = f.positional();
  std::set<std::string> seen;
  for (const std::string& d : a.runs_dirs) {
    fs::path normal = fs::path(d).lexically_normal();
    if (normal.filename().empty()) normal = normal.parent_path();  // "runs/" is "runs"
    if (!seen.insert(normal.string()).second)
      f.fail("RUNS_DIR " + d + " is given twice (each RUNS_DIR is one system)");
  }
  for (const std::string& spec : f.all("--project")) {
    try {
      a.projections.push_back(parse_projected_cluster(spec));
    } catch (const std::runtime_error& e) {
      f.fail(e.what());
    }
  }
  a.out_dir = f.get("--out", a.runs_dirs.front());
  a.plots = !f.has("--no-plots");
  if (const std::string problem = output_dir_problem(a.out_dir); !problem.empty())
    f.fail((f.has("--out") ? "--out " : "the first RUNS_DIR (the default --out) ") + a.out_dir +
           ": " + problem);
  return a;
}

// Draws the cascade plots; returns the Markdown section that shows them or says why not.
std::string plots_section(const PortabilityArgs& a, const fs::path& csv) {
  for (const char* n : kCascadePlots) fs::remove(fs::path(a.out_dir) / n);  // no stale plots
  std::string script;
  const std::string skipped = plots_unavailable(a.plots, "plot_portability.py", &script);
  std::string md = "## Cascade plots\n\n";
  if (!skipped.empty()) {
    std::printf("report: plots skipped: %s\n", skipped.c_str());
    return md + "Plots skipped: " + skipped + ". report_portability.csv holds every number.\n";
  }
  const int rc = run_program({kPlotPython, script, csv.string(), a.out_dir}, false);
  if (rc != 0) {
    std::printf("report: plots failed: %s exited with status %d\n", script.c_str(), rc);
    return md + "Plots failed: " + script + " exited with status " + std::to_string(rc) +
           " (its message went to stderr). report_portability.csv holds every number.\n";
  }
  md +=
      "Cascade plots (Sewall et al. 2020, \"Interpreting and visualizing performance portability "
      "metrics\"): per configuration, the systems ordered by decreasing efficiency; top: the "
      "efficiency on each, bottom: PP over the systems so far (a configuration's line ends at "
      "its first system where it did not run, where PP drops to 0).\n\n";
  const char* kinds[] = {"application", "architectural"};
  for (int i = 0; i < 2; i++)
    if (fs::exists(fs::path(a.out_dir) / kCascadePlots[i]))
      md += std::string("![cascade, ") + kinds[i] + " efficiency](" + kCascadePlots[i] + ")\n\n";
  return md;
}

}  // namespace

int run_portability_report(const std::vector<std::string>& args) {
  const PortabilityArgs a = parse_portability_args(args);
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  if (rank != 0) return 0;
  try {
    std::vector<PortabilitySystem> systems;
    for (const std::string& d : a.runs_dirs) systems.push_back(load_portability_system(d));
    disambiguate_system_names(systems);
    check_same_models(systems);
    const size_t measured = systems.size();
    for (const ProjectedCluster& c : a.projections)
      systems.push_back(project_system(
          c, std::vector<PortabilitySystem>(systems.begin(), systems.begin() + measured)));
    const std::string networks = find_project_file("configs/networks");
    assign_peaks(systems, networks.empty() ? std::vector<GpuPeak>{} : read_gpu_peaks(networks),
                 host_name(), [] { return measure_sgemm(); });
    const PortabilityMatrix m = portability_matrix(std::move(systems));
    std::error_code ec;
    fs::create_directories(a.out_dir, ec);
    if (ec) throw std::runtime_error("report: " + a.out_dir + ": cannot create: " + ec.message());
    const fs::path csv = fs::path(a.out_dir) / "report_portability.csv";
    write_file_atomic(csv.string(), portability_csv(m));
    const fs::path md = fs::path(a.out_dir) / "report_portability.md";
    write_file_atomic(md.string(), portability_markdown(m, plots_section(a, csv)));
    std::printf("report: %zu configurations on %zu systems -> %s, %s\n", m.configs.size(),
                m.systems.size(), md.string().c_str(), csv.string().c_str());
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "zerotrain: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace zt
