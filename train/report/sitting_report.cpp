#include "train/report/sitting_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <stdexcept>

#include "train/report/sitting_stats.h"
#include "train/report/table_text.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Pairs whose medians differ by more than this are "clearly apart" in the
// stability section's second agreement fraction.
constexpr double kWideGap = 0.10;

std::string sitting_name(int k) { return "sitting-" + std::to_string(k); }

// One configuration over the sittings; vectors are indexed like
// SittingSet::sittings, NaN where the run (or its baseline's run) is missing.
struct ConfigurationSittings {
  std::string name;
  const ReportRow* row = nullptr;  // its first run: stage, path, settings
  std::string baseline;            // the baseline's configuration name; "" none
  std::vector<double> tok_s, speedup, step_speedup;
  SittingSummary tok_s_stats, speedup_stats, step_stats;
};

std::vector<ConfigurationSittings> per_configuration(const RunsDir& runs, const SittingSet& set) {
  std::map<int, size_t> index_of_sitting;
  for (size_t i = 0; i < set.sittings.size(); i++) index_of_sitting[set.sittings[i]] = i;
  std::map<std::string, size_t> index_of_config;
  std::vector<ConfigurationSittings> out(set.configurations.size());
  const size_t n = set.sittings.size();
  for (size_t c = 0; c < out.size(); c++) {
    index_of_config[set.configurations[c]] = c;
    out[c].name = set.configurations[c];
    out[c].tok_s = out[c].speedup = out[c].step_speedup = std::vector<double>(n, kNaN);
  }
  // Runs are "sitting-k/NAME"; a configuration's baseline is the one its
  // first run with a baseline names, so that every sitting divides by the same
  // configuration.
  std::vector<std::vector<double>> step_ms(out.size(), std::vector<double>(n, kNaN));
  for (const ReportRow& r : runs.rows) {
    const size_t slash = r.run.find('/');
    const int k = std::stoi(r.run.substr(std::string("sitting-").size()));
    ConfigurationSittings& c = out[index_of_config.at(r.run.substr(slash + 1))];
    const size_t s = index_of_sitting.at(k);
    if (!c.row) c.row = &r;
    if (c.baseline.empty() && r.has_baseline)
      c.baseline = r.baseline_run.substr(r.baseline_run.find('/') + 1);
    c.tok_s[s] = r.tokens_per_second;
    step_ms[index_of_config.at(c.name)][s] = r.step_ms;
  }
  for (size_t c = 0; c < out.size(); c++) {
    ConfigurationSittings& x = out[c];
    x.tok_s_stats = summarize_sittings(x.tok_s);
    if (x.baseline.empty()) continue;
    const size_t b = index_of_config.at(x.baseline);
    for (size_t s = 0; s < n; s++) {
      if (out[b].tok_s[s] > 0) x.speedup[s] = x.tok_s[s] / out[b].tok_s[s];
      if (step_ms[c][s] > 0) x.step_speedup[s] = step_ms[b][s] / step_ms[c][s];
    }
    x.speedup_stats = summarize_sittings(x.speedup);
    x.step_stats = summarize_sittings(x.step_speedup);
  }
  return out;
}

// Configurations compared against the same baseline, by baseline name.
std::map<std::string, std::vector<const ConfigurationSittings*>> comparison_sets(
    const std::vector<ConfigurationSittings>& configs) {
  std::map<std::string, std::vector<const ConfigurationSittings*>> sets;
  for (const ConfigurationSittings& c : configs)
    if (!c.baseline.empty() && c.speedup_stats.sittings > 0) sets[c.baseline].push_back(&c);
  return sets;
}

std::string path_of(const ConfigurationSittings& c) {
  return path_label(*c.row) + (c.row->stage > 0 && c.row->deepspeed_default ? " (DS default)" : "");
}

std::string interval_text(const SittingSummary& s) {
  return fmt("[%.3f, ", s.interval.low) + fmt("%.3f]", s.interval.high);
}

// One measure's ranking in one comparison set, and the pairs not separated.
std::string ranking_text(std::vector<const ConfigurationSittings*> set,
                         SittingSummary ConfigurationSittings::*stats, const char* label) {
  std::stable_sort(set.begin(), set.end(), [&](const auto* a, const auto* b) {
    return (a->*stats).median > (b->*stats).median;
  });
  std::string s = std::string("- by ") + label + ":";
  for (size_t i = 0; i < set.size(); i++)
    s += std::string(i ? " >" : "") + " `" + set[i]->name + "` " +
         fmt("%.3fx ", (set[i]->*stats).median) + interval_text(set[i]->*stats);
  std::string overlapping;
  for (size_t i = 0; i < set.size(); i++)
    for (size_t j = i + 1; j < set.size(); j++)
      if (intervals_overlap((set[i]->*stats).interval, (set[j]->*stats).interval))
        overlapping += std::string(overlapping.empty() ? "" : ", ") + "`" + set[i]->name +
                       "` and `" + set[j]->name + "`";
  s += ".\n  Not separated (95% intervals overlap): " +
       (overlapping.empty() ? std::string("none") : overlapping) + ".\n";
  return s;
}

std::string agreement_text(const RankingAgreement& a, const char* label) {
  const auto fraction = [](int agreeing, int pairs) {
    return pairs == 0 ? std::string("no pairs")
                      : std::to_string(agreeing) + " of " + std::to_string(pairs) + " pairs (" +
                            fmt("%.0f%%", 100.0 * agreeing / pairs) + ")";
  };
  return std::string("- by ") + label + ": " + fraction(a.agreeing, a.pairs) +
         "; of the pairs whose medians differ by more than 10%: " +
         fraction(a.wide_agreeing, a.wide_pairs) + ".\n";
}

RankingAgreement agreement_over_sets(const std::vector<ConfigurationSittings>& configs,
                                     std::vector<double> ConfigurationSittings::*values) {
  RankingAgreement total;
  for (const auto& [baseline, set] : comparison_sets(configs)) {
    std::vector<std::vector<double>> items;
    for (const ConfigurationSittings* c : set) items.push_back(c->*values);
    const RankingAgreement a = ranking_agreement(items, kWideGap);
    total.pairs += a.pairs;
    total.agreeing += a.agreeing;
    total.wide_pairs += a.wide_pairs;
    total.wide_agreeing += a.wide_agreeing;
  }
  return total;
}

}  // namespace

bool is_sitting_set(const std::string& runs_dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(runs_dir, ec)) {
    std::error_code entry_ec;
    if (e.is_directory(entry_ec) && e.path().filename().string().rfind("sitting-", 0) == 0)
      return true;
  }
  return false;
}

RunsDir load_sitting_set(const std::string& runs_dir, SittingSet& set) {
  set = SittingSet();
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(runs_dir, ec)) {
    std::error_code entry_ec;
    if (e.is_directory(entry_ec)) dirs.push_back(e.path());
  }
  if (ec) throw std::runtime_error("report: " + runs_dir + ": cannot list: " + ec.message());
  const std::regex sitting_re("sitting-([1-9][0-9]{0,8})");
  for (const fs::path& d : dirs) {
    const std::string name = d.filename().string();
    std::smatch m;
    if (std::regex_match(name, m, sitting_re)) set.sittings.push_back(std::stoi(m[1]));
    else if (name.rfind("sitting-", 0) == 0)
      throw std::runtime_error("report: " + d.string() +
                               ": expected sitting-K with K a whole number >= 1 (as "
                               "scripts/sweep.sh --repeat writes)");
    else set.outside.push_back(name);
  }
  std::sort(set.sittings.begin(), set.sittings.end());
  std::sort(set.outside.begin(), set.outside.end());

  // Each sitting as a plain RUNS_DIR; one without any summary holds no run.
  std::vector<RunsDir> per_sitting;
  for (int k : set.sittings) {
    const fs::path dir = fs::path(runs_dir) / sitting_name(k);
    bool any = false;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
      any = any || fs::exists(e.path() / "summary.json");
    per_sitting.push_back(any ? load_runs_dir(dir.string()) : RunsDir());
  }
  std::map<std::string, int> sittings_with;
  for (const RunsDir& s : per_sitting)
    for (const ReportRow& r : s.rows) {
      if (sittings_with[r.run]++ == 0) set.configurations.push_back(r.run);
    }
  const int n = static_cast<int>(set.sittings.size());
  bool any_complete = false;
  for (const auto& [config, count] : sittings_with) any_complete = any_complete || count == n;
  if (!any_complete) {
    std::string counts;
    for (size_t i = 0; i < per_sitting.size(); i++)
      counts += (i ? ", " : "") + sitting_name(set.sittings[i]) + ": " +
                std::to_string(per_sitting[i].rows.size()) + " runs";
    throw std::runtime_error("report: " + runs_dir + ": the sittings have no run in common (" +
                             counts + "); expected the same RUN under every sitting-K/");
  }

  RunsDir all;
  for (const std::string& config : set.configurations) {
    for (size_t i = 0; i < per_sitting.size(); i++) {
      const std::string prefix = sitting_name(set.sittings[i]) + "/";
      const auto& rows = per_sitting[i].rows;
      const auto it = std::find_if(rows.begin(), rows.end(),
                                   [&](const ReportRow& r) { return r.run == config; });
      if (it == rows.end()) {
        set.missing.push_back(sitting_name(set.sittings[i]) + " lacks " + config + " (present in " +
                              std::to_string(sittings_with[config]) + " of " + std::to_string(n) +
                              " sittings; its statistics use those)");
        continue;
      }
      ReportRow r = *it;
      r.run = prefix + r.run;
      if (r.has_baseline) r.baseline_run = prefix + r.baseline_run;
      all.rows.push_back(r);
    }
  }
  for (size_t i = 0; i < per_sitting.size(); i++)
    for (const std::string& d : per_sitting[i].without_summary)
      all.without_summary.push_back(sitting_name(set.sittings[i]) + "/" + d);
  return all;
}

std::string sitting_csv(const RunsDir& runs, const SittingSet& set) {
  const std::vector<ConfigurationSittings> configs = per_configuration(runs, set);
  std::map<std::string, const ConfigurationSittings*> by_name;
  for (const ConfigurationSittings& c : configs) by_name[c.name] = &c;
  CsvColumns extra;
  extra.header =
      "configuration,sitting,sittings,speedup_median,speedup_ci_low,speedup_ci_high,speedup_min,"
      "speedup_max,step_speedup_median,step_speedup_ci_low,step_speedup_ci_high,step_speedup_min,"
      "step_speedup_max";
  for (const ReportRow& r : runs.rows) {
    const size_t slash = r.run.find('/');
    const ConfigurationSittings& c = *by_name.at(r.run.substr(slash + 1));
    std::string f =
        csv_field(c.name) + "," +
        r.run.substr(std::string("sitting-").size(), slash - std::string("sitting-").size());
    const SittingSummary& s = c.speedup_stats;
    const SittingSummary& t = c.step_stats;
    f += "," + std::to_string(s.sittings);
    for (const SittingSummary* x : {&s, &t}) {
      for (double v : {x->median, x->interval.low, x->interval.high, x->min, x->max})
        f += "," + (x->sittings > 0 ? g12(v) : "");
    }
    extra.fields.push_back(f);
  }
  return report_csv(runs.rows, &extra);
}

std::string sitting_markdown(const RunsDir& runs, const SittingSet& set) {
  const std::vector<ConfigurationSittings> configs = per_configuration(runs, set);
  const size_t n = set.sittings.size();
  std::string md = "## Repeated sittings\n\n" + std::to_string(configs.size()) +
                   " configurations in " + std::to_string(n) +
                   " sittings (`sitting-K/RUN/summary.json`; scripts/sweep.sh --repeat runs "
                   "every configuration once per sitting, in the same order, so that drift "
                   "reaches all of them alike). Each speed-up is taken within one sitting: "
                   "**speed-up (tokens/s)** is the run's tok/s over the DeepSpeed-default run's "
                   "tok/s of the same sitting, **speed-up (median step)** the default run's "
                   "median step over the run's. Over the sittings, each is given as the median, "
                   "a 95% bootstrap interval of the median (the sittings resampled with "
                   "replacement 2000 times, mt19937_64 seed " +
                   std::to_string(kBootstrapSeed) +
                   ", percentile interval: the 50th and 1950th of the 2000 sorted resampled "
                   "medians), and the min and max.\n\n";
  for (const std::string& m : set.missing) md += "- Missing run: " + m + ".\n";
  if (!set.outside.empty()) {
    md += "- Left out, not a sitting:";
    for (const std::string& d : set.outside) md += " `" + d + "`";
    md += ".\n";
  }
  if (!set.missing.empty() || !set.outside.empty()) md += "\n";

  md += "### Tokens per second per sitting\n\n| configuration | stage | grad path |";
  std::string rule = "| --- | ---: | --- |";
  for (int k : set.sittings) {
    md += " sitting " + std::to_string(k) + " |";
    rule += " ---: |";
  }
  md += " median |\n" + rule + " ---: |\n";
  for (const ConfigurationSittings& c : configs) {
    std::vector<std::string> f = {c.name, std::to_string(c.row->stage), path_of(c)};
    for (size_t s = 0; s < n; s++)
      f.push_back(std::isnan(c.tok_s[s]) ? "—" : fmt("%.0f", c.tok_s[s]));
    f.push_back(fmt("%.0f", c.tok_s_stats.median));
    md += markdown_row(f);
  }

  md +=
      "\n### Speed-ups over the sittings\n\n"
      "| configuration | stage | grad path | baseline | sittings | speed-up (tokens/s) median | "
      "95% interval | min | max | speed-up (median step) median | 95% interval | min | max |\n"
      "| --- | ---: | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |\n";
  for (const ConfigurationSittings& c : configs) {
    std::vector<std::string> f = {c.name, std::to_string(c.row->stage), path_of(c),
                                  c.baseline.empty() ? "—" : c.baseline,
                                  std::to_string(c.speedup_stats.sittings)};
    for (const SittingSummary* x : {&c.speedup_stats, &c.step_stats}) {
      const bool has = x->sittings > 0;
      f.push_back(has ? fmt("%.3fx", x->median) : "—");
      f.push_back(has ? interval_text(*x) : "—");
      f.push_back(has ? fmt("%.3fx", x->min) : "—");
      f.push_back(has ? fmt("%.3fx", x->max) : "—");
    }
    md += markdown_row(f);
  }

  md +=
      "\n### Rankings\n\nPer baseline (the runs of one stage and settings, differing in the "
      "gradient path), the configurations by median speed-up with their 95% intervals; a pair "
      "whose intervals overlap is not separated by these sittings.\n\n";
  const auto sets = comparison_sets(configs);
  for (const auto& [baseline, set_members] : sets) {
    md += "Against `" + baseline + "`:\n\n";
    md += ranking_text(set_members, &ConfigurationSittings::speedup_stats, "speed-up (tokens/s)");
    md += ranking_text(set_members, &ConfigurationSittings::step_stats, "speed-up (median step)");
    md += "\n";
  }
  if (sets.empty()) md += "No configuration has a DeepSpeed-default baseline.\n\n";

  md +=
      "### Stability\n\nSpread across sittings: max / min − 1 of each configuration's per-sitting "
      "values (the baseline's own speed-ups are 1 in every sitting and left out).\n\n"
      "| configuration | speed-up (tokens/s) spread | speed-up (median step) spread | tok/s spread "
      "|\n| --- | ---: | ---: | ---: |\n";
  for (const ConfigurationSittings& c : configs) {
    const bool has = c.speedup_stats.sittings > 0 && c.name != c.baseline;
    md += markdown_row({c.name, has ? fmt("%.1f%%", spread_percent(c.speedup_stats)) : "—",
                        has ? fmt("%.1f%%", spread_percent(c.step_stats)) : "—",
                        fmt("%.1f%%", spread_percent(c.tok_s_stats))});
  }
  md +=
      "\nPath rankings that agree in every sitting: over every pair of configurations compared "
      "against the same baseline (the baseline included) that share a sitting, the fraction "
      "whose order (by the per-sitting speed-up; a tie is an order of its own) is the same in "
      "every sitting both ran in.\n\n";
  md += agreement_text(agreement_over_sets(configs, &ConfigurationSittings::speedup),
                       "speed-up (tokens/s)");
  md += agreement_text(agreement_over_sets(configs, &ConfigurationSittings::step_speedup),
                       "speed-up (median step)");
  return md +
         "\n## Every run\n\nEach sitting's runs, their speed-ups taken within their own "
         "sitting:\n\n";
}

}  // namespace zt
