#include "train/report/portability_tables.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "train/report/report_table.h"
#include "train/report/table_text.h"

namespace zt {
namespace {

double flops_per_token_of(const PortabilityRun& r) {
  return flops_per_token(r.model.params, r.model.n_layer, r.model.n_embd, r.model.seq_len);
}

std::string system_label(size_t s) { return "S" + std::to_string(s + 1); }

// The configuration with the highest PP (the first in name order on a tie), or -1 when every PP is
// 0.
int most_portable(const std::vector<double>& pp) {
  int best = -1;
  for (size_t c = 0; c < pp.size(); c++)
    if (pp[c] > 0 && (best < 0 || pp[c] > pp[static_cast<size_t>(best)]))
      best = static_cast<int>(c);
  return best;
}

std::string peak_text(const PortabilitySystem& sys) {
  if (sys.peak_source.empty()) return "none: " + sys.no_peak_reason;
  double lo = sys.runs.front().peak_flops, hi = lo;
  for (const PortabilityRun& r : sys.runs) {
    lo = std::min(lo, r.peak_flops);
    hi = std::max(hi, r.peak_flops);
  }
  return (lo == hi ? fmt("%.4g", lo / 1e12)
                   : fmt("%.4g", lo / 1e12) + " to " + fmt("%.4g", hi / 1e12) +
                         " (per configuration, see the CSV)") +
         " TFLOP/s: " + sys.peak_source;
}

std::string systems_table(const PortabilityMatrix& m) {
  std::string s =
      "| | system | RUNS_DIR | configurations | tok/s is | peak FLOP/s (all ranks) and its source "
      "|\n| --- | --- | --- | ---: | --- | --- |\n";
  for (size_t i = 0; i < m.systems.size(); i++) {
    const PortabilitySystem& sys = m.systems[i];
    const std::string rate =
        !sys.projection.empty() ? "**a projection, not measured**: " + sys.projection
        : sys.sittings == 0     ? "measured, one run"
                                : "the median over " + std::to_string(sys.sittings) +
                                  " sittings (sitting-<k>/; fewer where a "
                                  "configuration is missing from some, see the "
                                  "CSV's sittings_ran)";
    s += markdown_row({system_label(i), sys.name,
                       sys.runs_dir.empty() ? "(none)" : "`" + sys.runs_dir + "`",
                       std::to_string(sys.runs.size()), rate, peak_text(sys)});
  }
  return s;
}

std::string efficiency_table(const PortabilityMatrix& m, const std::vector<Efficiencies>& eff,
                             const std::vector<double>& pp, const std::vector<size_t>& systems) {
  std::string head = "| configuration |", rule = "| --- |";
  for (size_t s : systems) {
    head += " " + system_label(s) + " |";
    rule += " ---: |";
  }
  std::string out = head + " PP |\n" + rule + " ---: |\n";
  for (size_t c = 0; c < m.configs.size(); c++) {
    std::vector<std::string> f = {m.configs[c]};
    for (size_t s : systems) f.push_back(eff[c][s] ? fmt("%.3f", *eff[c][s]) : "did not run");
    f.push_back(fmt("%.3f", pp[c]));
    out += markdown_row(f);
  }
  return out;
}

// The most portable configuration by one PP, and per system what running it
// instead of that system's own best costs in tok/s.
std::string portable_section(const PortabilityMatrix& m, const std::vector<double>& pp,
                             const std::string& kind) {
  const int best = most_portable(pp);
  if (best < 0)
    return "No configuration ran on every system of H, so every PP (" + kind +
           ") is 0 and none is the most portable.\n";
  const size_t c = static_cast<size_t>(best);
  std::string s = "Most portable by " + kind + " efficiency: **" + m.configs[c] +
                  "** (PP = " + fmt("%.3f", pp[c]) +
                  "). Running it instead of each system's own best costs, in tok/s:\n\n"
                  "| system | own best | its tok/s | " +
                  m.configs[c] + " tok/s | cost |\n| --- | --- | ---: | ---: | ---: |\n";
  for (size_t sys = 0; sys < m.systems.size(); sys++) {
    const PortabilityRun* r = m.run(c, sys);
    std::string best_name;
    for (size_t o = 0; o < m.configs.size(); o++)
      if (m.run(o, sys) && m.run(o, sys)->tokens_per_second == m.best_tokens_per_second[sys] &&
          best_name.empty())
        best_name = m.configs[o];
    const double cost = r ? 100.0 * (1 - r->tokens_per_second / m.best_tokens_per_second[sys]) : 0;
    s += markdown_row({system_label(sys), best_name, fmt("%.0f", m.best_tokens_per_second[sys]),
                       r ? fmt("%.0f", r->tokens_per_second) : "did not run",
                       r ? fmt("%.1f %%", cost) : "—"});
  }
  return s;
}

}  // namespace

PortabilityMatrix portability_matrix(std::vector<PortabilitySystem> systems) {
  PortabilityMatrix m;
  m.systems = std::move(systems);
  std::set<std::string> names;
  for (const PortabilitySystem& sys : m.systems)
    for (const PortabilityRun& r : sys.runs) names.insert(r.config);
  m.configs.assign(names.begin(), names.end());
  const size_t n_sys = m.systems.size();
  m.run_index.assign(m.configs.size(), std::vector<int>(n_sys, -1));
  for (size_t s = 0; s < n_sys; s++)
    for (size_t i = 0; i < m.systems[s].runs.size(); i++) {
      const size_t c = static_cast<size_t>(
          std::lower_bound(m.configs.begin(), m.configs.end(), m.systems[s].runs[i].config) -
          m.configs.begin());
      m.run_index[c][s] = static_cast<int>(i);
    }
  for (size_t s = 0; s < n_sys; s++)
    if (!m.systems[s].peak_source.empty()) m.systems_with_peak.push_back(s);

  m.application.assign(m.configs.size(), Efficiencies(n_sys));
  m.architectural.assign(m.configs.size(), Efficiencies(n_sys));
  for (size_t s = 0; s < n_sys; s++) {
    std::vector<std::optional<double>> rates;
    for (size_t c = 0; c < m.configs.size(); c++)
      rates.push_back(m.run(c, s) ? std::optional<double>(m.run(c, s)->tokens_per_second)
                                  : std::nullopt);
    const Efficiencies app = application_efficiencies(rates);
    double best = 0;
    for (const std::optional<double>& t : rates) best = std::max(best, t.value_or(0));
    m.best_tokens_per_second.push_back(best);
    for (size_t c = 0; c < m.configs.size(); c++) {
      m.application[c][s] = app[c];
      const PortabilityRun* r = m.run(c, s);
      if (r && r->peak_flops > 0)
        m.architectural[c][s] = r->tokens_per_second * flops_per_token_of(*r) / r->peak_flops;
    }
  }
  for (size_t c = 0; c < m.configs.size(); c++) {
    m.pp_application.push_back(performance_portability(m.application[c]));
    Efficiencies over_h;
    for (size_t s : m.systems_with_peak) over_h.push_back(m.architectural[c][s]);
    m.pp_architectural.push_back(performance_portability(over_h));
  }
  return m;
}

std::string portability_csv(const PortabilityMatrix& m) {
  std::string out =
      "configuration,system,runs_dir,ran,sittings_ran,world,params,n_layer,n_embd,seq_len,"
      "tokens_per_second,best_tokens_per_second,application_efficiency,model_flops_per_token,"
      "model_flops_per_second,peak_flops_per_second,architectural_efficiency,in_architectural_h,"
      "pp_application,pp_architectural,peak_source\n";
  for (size_t c = 0; c < m.configs.size(); c++)
    for (size_t s = 0; s < m.systems.size(); s++) {
      const PortabilityRun* r = m.run(c, s);
      const PortabilitySystem& sys = m.systems[s];
      const bool in_h = !sys.peak_source.empty();
      std::vector<std::string> f = {csv_field(m.configs[c]), csv_field(sys.name),
                                    csv_field(sys.runs_dir), r ? "true" : "false"};
      if (r) {
        const double fpt = flops_per_token_of(*r);
        for (const std::string& x :
             {std::to_string(r->sittings_ran), std::to_string(r->world),
              std::to_string(r->model.params), std::to_string(r->model.n_layer),
              std::to_string(r->model.n_embd), std::to_string(r->model.seq_len),
              g12(r->tokens_per_second), g12(m.best_tokens_per_second[s]),
              g12(*m.application[c][s]), g12(fpt), g12(r->tokens_per_second * fpt),
              in_h ? g12(r->peak_flops) : "", in_h ? g12(*m.architectural[c][s]) : ""})
          f.push_back(x);
      } else {
        f.insert(f.end(), 7, "");  // sittings_ran .. tokens_per_second
        f.push_back(g12(m.best_tokens_per_second[s]));
        f.insert(f.end(), 5, "");  // application_efficiency .. architectural_efficiency
      }
      f.push_back(in_h ? "true" : "false");
      f.push_back(g12(m.pp_application[c]));
      f.push_back(m.systems_with_peak.empty() ? "" : g12(m.pp_architectural[c]));
      f.push_back(csv_field(in_h ? sys.peak_source : "none: " + sys.no_peak_reason));
      for (size_t i = 0; i < f.size(); i++) out += (i ? "," : "") + f[i];
      out += "\n";
    }
  return out;
}

std::string portability_markdown(const PortabilityMatrix& m, const std::string& plots) {
  std::vector<size_t> all(m.systems.size());
  for (size_t s = 0; s < all.size(); s++) all[s] = s;
  std::string md =
      "# zerotrain report --portability\n\n" + std::to_string(m.configs.size()) +
      " configurations (a configuration is a run NAME) on " + std::to_string(m.systems.size()) +
      " systems (one per RUNS_DIR, named from what its runs recorded: device, "
      "compute emulation, nodes x ranks per node, the emulated link, host).\n\n" +
      systems_table(m) +
      "\n**Performance portability** (Pennycook, Sewall and Lee): PP(a, p, H) = |H| / "
      "Σ_{i∈H} 1/e_i(a, p), the harmonic mean of configuration a's efficiencies on "
      "the systems i of H, and 0 when a did not run on one of them. "
      "**Application efficiency**: a's tok/s over the best tok/s of any configuration "
      "on the same system. **Architectural efficiency**: a's model FLOP/s over the "
      "system's peak FLOP/s, model FLOP/s = tok/s × (6·N + 6·L·C·T) (N parameters, "
      "L layers, C the width, T the sequence length; the formula of report.md's TFLOP/s "
      "column: attention scores and weighted values under the causal mask).\n\n## Application "
      "efficiency\n\nH = every system.\n\n" +
      efficiency_table(m, m.application, m.pp_application, all) + "\n" +
      portable_section(m, m.pp_application, "application") + "\n## Architectural efficiency\n\n";
  if (m.systems_with_peak.empty()) {
    md +=
        "No system has a known peak (see the systems table), so there is no architectural "
        "efficiency.\n";
  } else {
    md += "H = the systems with a known peak:";
    for (size_t s : m.systems_with_peak) md += " " + system_label(s);
    if (m.systems_with_peak.size() < m.systems.size()) {
      md += "; left out (no peak, see the systems table):";
      for (size_t s = 0; s < m.systems.size(); s++)
        if (m.systems[s].peak_source.empty()) md += " " + system_label(s);
    }
    md += ".\n\n" + efficiency_table(m, m.architectural, m.pp_architectural, m.systems_with_peak) +
          "\n" + portable_section(m, m.pp_architectural, "architectural");
  }
  return md + "\n" + plots;
}

}  // namespace zt
