#include "train/report/portability_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "data/input/escape_control.h"
#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "train/report/table_text.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// Far above any summary.json a run writes (a few KiB), far below a memory problem.
constexpr uint64_t kSummaryMaxBytes = uint64_t(16) << 20;

class Summary {
 public:
  explicit Summary(const std::string& path) : path_(path) {
    try {
      root_ = parse_json(read_small_file(path, "run summary", kSummaryMaxBytes), path,
                         JsonDialect::Strict);
    } catch (const JsonError& e) {
      throw std::runtime_error(std::string(e.what()) +
                               " (a truncated summary.json, or not one zerotrain wrote)");
    } catch (const DataError& e) {
      throw std::runtime_error(e.what());
    }
    if (root_.kind != JsonValue::Kind::object) fail("expected a JSON object");
  }

  // The value at a dotted key, or nullptr.
  const JsonValue* find(const std::string& dotted) const {
    const JsonValue* v = &root_;
    for (size_t b = 0, e; v && b <= dotted.size(); b = e + 1) {
      e = std::min(dotted.find('.', b), dotted.size());
      v = v->kind == JsonValue::Kind::object ? v->find(dotted.substr(b, e - b)) : nullptr;
    }
    return v;
  }
  double number(const std::string& dotted) const {
    const JsonValue* v = find(dotted);
    if (!v) fail("missing key '" + dotted + "'");
    if (v->kind != JsonValue::Kind::number || !std::isfinite(v->number()))
      fail("key '" + dotted + "': expected a finite number, got " + describe_json(*v));
    return v->number();
  }
  int integer(const std::string& dotted) const {
    const double v = number(dotted);
    if (v != std::floor(v) || v < 0 || v > 2e9)
      fail("key '" + dotted + "': expected a whole number from 0 to 2e9, got " +
           find(dotted)->text);
    return static_cast<int>(v);
  }
  // A string, or `fallback` when the key is absent or null.
  std::string text(const std::string& dotted, const std::string& fallback = "") const {
    const JsonValue* v = find(dotted);
    if (!v || v->kind == JsonValue::Kind::null) return fallback;
    if (v->kind != JsonValue::Kind::string) fail("key '" + dotted + "': expected a string");
    return v->text;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(path_ + ": unreadable summary: " + escape_control_bytes(why));
  }

 private:
  std::string path_;
  JsonValue root_;
};

// The system one run recorded, as PortabilitySystem's fields and its name.
PortabilitySystem system_of(const Summary& s) {
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
  sys.name = device + ", " + std::to_string(s.integer("comm.nodes")) + "x" +
             std::to_string(s.integer("comm.ranks_per_node")) + " ranks, " + link + ", host " +
             (sys.host.empty() ? "not recorded" : sys.host);
  return sys;
}

PortabilityRun run_of(const Summary& s, const std::string& name) {
  PortabilityRun r;
  r.config = name;
  r.tokens_per_second = s.number("tokens_per_second");
  if (!(r.tokens_per_second > 0)) s.fail("key 'tokens_per_second': expected above 0");
  r.model.params = static_cast<int64_t>(s.number("params"));
  r.model.n_layer = s.integer("config.model.n_layer");
  r.model.n_head = s.integer("config.model.n_head");
  r.model.n_embd = s.integer("config.model.n_embd");
  r.model.seq_len = s.integer("config.model.seq_len");
  r.model.vocab_size = s.integer("config.model.vocab_size");
  r.world = s.integer("world_size");
  r.micro_batch = s.integer("config.train.micro_batch");
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
      const Summary s(path.string());
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
