#include "train/report/portability_runs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "data/json_reader.h"
#include "train/report/summary_file.h"
#include "train/report/table_text.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// The system one run recorded, as PortabilitySystem's fields and its name.
PortabilitySystem system_of(const SummaryFile& s) {
  PortabilitySystem sys;
  sys.device = s.text("device");
  sys.gpu = s.text("host.gpu");
  sys.cpu = s.text("host.cpu");
  sys.host = s.text("host.name");
  const std::string mode = s.text("compute_mode", "real");
  if (mode != "real" && mode != "emulated")
    s.fail("key 'compute_mode': expected \"real\" or \"emulated\", got '" + mode + "'");
  sys.emulated_compute = mode == "emulated";
  if (sys.emulated_compute) {
    sys.emulated_device = s.text("emulated_compute.device");
    sys.emulated_source = s.text("emulated_compute.source");
  }
  std::string device = sys.device == "cuda" ? "cuda " + (sys.gpu.empty() ? "(GPU model not "
                                                                           "recorded)"
                                                                         : sys.gpu)
                                            : "cpu" + (sys.cpu.empty() ? "" : " " + sys.cpu);
  if (sys.emulated_compute)
    device = "emulated " + (sys.emulated_device.empty() ? "device" : sys.emulated_device) +
             " (compute emulated on " + device + ")";
  std::string link = "no emulated link";
  if (const JsonValue* c = s.find("cluster"); c && c->kind == JsonValue::Kind::object) {
    link = "link " + fmt("%.6g", s.number("cluster.link.rate_bits_per_s") / 1e6) + " Mbit/s";
    const JsonValue* delay = s.find("cluster.link.delay_us");
    if (delay && delay->kind == JsonValue::Kind::number && delay->number() > 0)
      link += " + " + fmt("%.6g", delay->number()) + " us delay";
  }
  sys.name = device + ", " + std::to_string(s.count("comm.nodes")) + "x" +
             std::to_string(s.count("comm.ranks_per_node")) + " ranks, " + link + ", host " +
             (sys.host.empty() ? "not recorded" : sys.host);
  return sys;
}

PortabilityRun run_of(const SummaryFile& s, const std::string& name) {
  PortabilityRun r;
  r.config = name;
  r.tokens_per_second = s.number("tokens_per_second");
  if (!(r.tokens_per_second > 0)) s.fail("key 'tokens_per_second': expected above 0");
  r.model.params = static_cast<int64_t>(s.number("params"));
  r.model.n_layer = s.count("config.model.n_layer");
  r.model.n_head = s.count("config.model.n_head");
  r.model.n_embd = s.count("config.model.n_embd");
  r.model.seq_len = s.count("config.model.seq_len");
  r.model.vocab_size = s.count("config.model.vocab_size");
  r.world = s.count("world_size");
  r.micro_batch = s.count("config.train.micro_batch");
  if (s.text("compute_mode", "real") == "emulated") {
    r.emulated_micro_step_ms = s.number("emulated_compute.micro_step_ms");
    if (!(r.emulated_micro_step_ms > 0)) s.fail("emulated_compute: expected micro_step_ms above 0");
  }
  return r;
}

std::vector<fs::path> subdirectories(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code entry_ec;
    if (e.is_directory(entry_ec)) dirs.push_back(e.path());
  }
  if (ec) throw std::runtime_error("report: " + dir.string() + ": cannot list: " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

bool is_sitting(const fs::path& d) {
  const std::string n = d.filename().string();
  return n.rfind("sitting-", 0) == 0 && n.size() > 8 &&
         n.find_first_not_of("0123456789", 8) == std::string::npos;
}

// "runs/h200/" -> "h200".
std::string last_component(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

bool ModelShape::operator==(const ModelShape& o) const {
  return params == o.params && n_layer == o.n_layer && n_head == o.n_head && n_embd == o.n_embd &&
         seq_len == o.seq_len && vocab_size == o.vocab_size;
}

std::string ModelShape::text() const {
  return std::to_string(params) + " params, " + std::to_string(n_layer) + " layers, " +
         std::to_string(n_head) + " heads, " + std::to_string(n_embd) + " wide, " +
         std::to_string(seq_len) + " tokens, " + std::to_string(vocab_size) + " vocab";
}

PortabilitySystem load_portability_system(const std::string& runs_dir) {
  std::error_code ec;
  if (!fs::is_directory(runs_dir, ec))
    throw std::runtime_error("report --portability: RUNS_DIR " + runs_dir + ": not a directory");
  std::vector<fs::path> sittings;
  for (const fs::path& d : subdirectories(runs_dir))
    if (is_sitting(d)) sittings.push_back(d);
  const std::vector<fs::path> sets = sittings.empty() ? std::vector<fs::path>{runs_dir} : sittings;

  PortabilitySystem sys;
  std::string first_summary;
  std::map<std::string, std::vector<PortabilityRun>> by_config;
  for (const fs::path& set : sets) {
    for (const fs::path& d : subdirectories(set)) {
      const fs::path path = d / "summary.json";
      if (is_sitting(d) || !fs::exists(path)) continue;
      const SummaryFile s(path.string());
      PortabilitySystem here = system_of(s);
      if (first_summary.empty()) {
        sys = here;
        first_summary = path.string();
      } else if (here.name != sys.name) {
        throw std::runtime_error("report --portability: RUNS_DIR " + runs_dir +
                                 " holds runs of two systems: '" + sys.name + "' (" +
                                 first_summary + ") and '" + here.name + "' (" + path.string() +
                                 "); give each system its own RUNS_DIR");
      }
      by_config[d.filename().string()].push_back(run_of(s, d.filename().string()));
      by_config[d.filename().string()].back().summary_path = path.string();
    }
  }
  if (by_config.empty())
    throw std::runtime_error("report --portability: RUNS_DIR " + runs_dir +
                             " has no runs (expected RUNS_DIR/NAME/summary.json or "
                             "RUNS_DIR/sitting-<k>/NAME/summary.json)");
  sys.runs_dir = runs_dir;
  sys.sittings = static_cast<int>(sittings.size());
  for (auto& [config, runs] : by_config) {
    PortabilityRun r = runs.front();
    for (const PortabilityRun& other : runs)
      if (!(other.model == r.model) || other.world != r.world)
        throw std::runtime_error("report --portability: RUNS_DIR " + runs_dir + ": configuration " +
                                 config + " ran different models or world sizes in two sittings");
    std::vector<double> rates;
    for (const PortabilityRun& other : runs) rates.push_back(other.tokens_per_second);
    r.tokens_per_second = median(rates);
    r.sittings_ran = static_cast<int>(runs.size());
    sys.runs.push_back(r);
  }
  return sys;
}

void disambiguate_system_names(std::vector<PortabilitySystem>& systems) {
  std::map<std::string, int> count;
  for (const PortabilitySystem& s : systems) count[s.name]++;
  std::map<std::string, int> leaf_count;
  for (const PortabilitySystem& s : systems)
    if (count[s.name] > 1) leaf_count[last_component(s.runs_dir)]++;
  for (PortabilitySystem& s : systems) {
    if (count[s.name] < 2) continue;
    const std::string leaf = last_component(s.runs_dir);
    s.name += " [" + (leaf_count[leaf] > 1 || leaf.empty() ? s.runs_dir : leaf) + "]";
  }
}

void check_same_models(const std::vector<PortabilitySystem>& systems) {
  std::map<std::string, std::pair<const PortabilitySystem*, const PortabilityRun*>> first;
  for (const PortabilitySystem& sys : systems)
    for (const PortabilityRun& r : sys.runs) {
      const auto [it, inserted] = first.emplace(r.config, std::make_pair(&sys, &r));
      if (!inserted && !(it->second.second->model == r.model))
        throw std::runtime_error(
            "report --portability: configuration " + r.config +
            " is a different model on two systems: " + it->second.first->runs_dir + " ran " +
            it->second.second->model.text() + ", " + sys.runs_dir + " ran " + r.model.text() +
            " (one NAME must be one configuration)");
    }
}

}  // namespace zt
