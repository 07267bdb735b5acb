// The performance-portability metric of `zerotrain report --portability` on
// hand-computed cases: the harmonic mean, 0 for an unsupported system, the
// single-system set, application efficiency, the FLOPs formula, and the
// matrix over two hand-made systems (a configuration missing on one).
#include <cmath>
#include <optional>

#include "tests/support/catch.h"
#include "train/report/portability.h"
#include "train/report/portability_tables.h"

namespace zt {
namespace {

PortabilityRun run(const std::string& config, double tokens_per_second, double peak_flops) {
  PortabilityRun r;
  r.config = config;
  r.tokens_per_second = tokens_per_second;
  r.model.params = 1000;
  r.model.n_layer = 2;
  r.model.n_embd = 10;
  r.model.seq_len = 5;
  r.world = 1;
  r.peak_flops = peak_flops;
  return r;
}

TEST_CASE("portability: PP is the harmonic mean of the efficiencies", "[portability]") {
  // 2 / (1/0.5 + 1/1.0) = 2 / 3
  CHECK(performance_portability({0.5, 1.0}) == Approx(2.0 / 3.0));
  // 3 / (1/0.25 + 1/0.5 + 1/1) = 3 / 7
  CHECK(performance_portability({0.25, 0.5, 1.0}) == Approx(3.0 / 7.0));
}

TEST_CASE("portability: a system where the configuration did not run gives 0", "[portability]") {
  CHECK(performance_portability({0.5, std::nullopt, 1.0}) == 0);
  CHECK(performance_portability({0.0, 1.0}) == 0);
  CHECK(performance_portability({}) == 0);
}

TEST_CASE("portability: over one system PP is that system's efficiency", "[portability]") {
  for (double e : {0.125, 0.3, 0.77, 1.0}) CHECK(performance_portability({e}) == Approx(e));
}

TEST_CASE("portability: application efficiency is tok/s over the system's best", "[portability]") {
  const Efficiencies e = application_efficiencies({200.0, std::nullopt, 800.0, 400.0});
  REQUIRE(e.size() == 4);
  CHECK(*e[0] == Approx(0.25));
  CHECK(!e[1]);
  CHECK(*e[2] == 1.0);  // the best, exactly
  CHECK(*e[3] == Approx(0.5));
}

TEST_CASE("portability: the matrix over two systems", "[portability]") {
  // Model FLOPs per token of run(): 6 * 1000 + 6 * 2 * 10 * 5 = 6600.
  PortabilitySystem a, b;
  a.name = "A";
  a.peak_source = "stated";
  a.runs = {run("x", 100, 6600 * 400.0), run("y", 50, 6600 * 400.0)};
  b.name = "B";
  b.no_peak_reason = "none known";
  b.runs = {run("x", 30, 0), run("y", 60, 0), run("z", 10, 0)};
  const PortabilityMatrix m = portability_matrix({a, b});
  REQUIRE(m.configs == std::vector<std::string>{"x", "y", "z"});
  // x: application 1.0 on A, 0.5 on B -> 2/3; y: 0.5 and 1.0 -> 2/3; z: did not run on A -> 0.
  CHECK(*m.application[0][0] == 1.0);
  CHECK(*m.application[0][1] == Approx(0.5));
  CHECK(m.pp_application[0] == Approx(2.0 / 3.0));
  CHECK(m.pp_application[1] == Approx(2.0 / 3.0));
  CHECK(!m.application[2][0]);
  CHECK(m.pp_application[2] == 0);
  // Architectural over H = {A} only (B has no peak): x 100/400, y 50/400.
  REQUIRE(m.systems_with_peak == std::vector<size_t>{0});
  CHECK(*m.architectural[0][0] == Approx(0.25));
  CHECK(m.pp_architectural[0] == Approx(0.25));
  CHECK(m.pp_architectural[1] == Approx(0.125));
  const std::string md = portability_markdown(m, "");
  CHECK(md.find("did not run") != std::string::npos);
  CHECK(md.find("Most portable by application efficiency: **x** (PP = 0.667)") !=
        std::string::npos);
}

}  // namespace
}  // namespace zt
