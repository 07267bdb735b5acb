// `zerotrain report`: a temporary RUNS_DIR of hand-made summary.json files with
// random numbers, checked through the CSV (configuration columns, TFLOP/s,
// gradient bytes without the norm all-reduce, speed-ups and their baselines),
// the Markdown table and the labels that say which speed-up each column shows,
// the command's files, and the one-line errors.
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/cli/commands.h"
#include "train/config/config.h"
#include "train/report/report_table.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct Bytes {
  double payload, bus, inter = 0;  // inter: the part of bus sent to another node
};

// What one fake run reports; the test's own notion of a summary.json.
struct FakeRun {
  std::string name, grad_path = "allreduce";
  int stage = 0, world = 2, micro_batch = 2, seq_len = 64, n_layer = 2, n_embd = 64;
  int64_t global_tokens = 0, bucket = 500000000, params = 0;
  bool overlap = false, reduce_scatter = true;
  double tok_s = 0, step_ms = 0, exposed_s = 0, model_states = 0, peak_total = 0;
  Bytes all_reduce{0, 0}, reduce{0, 0}, reduce_scatter_bytes{0, 0}, all_gather{0, 0};
};

std::string per_step_json(const char* name, Bytes b) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "\"%s\":{\"calls\":1,\"bytes\":%.17g,\"bus_bytes\":%.17g,"
                "\"inter_node_bus_bytes\":%.17g}",
                name, b.payload, b.bus, b.inter);
  return buf;
}

std::string summary_json(const FakeRun& r) {
  std::ostringstream o;
  o.precision(17);
  const char* tf[] = {"false", "true"};
  o << "{\"world_size\":" << r.world << ",\"steps\":5,\"steps_this_run\":5,"
    << "\"tokens_per_second\":" << r.tok_s << ",\"step_ms_median\":" << r.step_ms
    << ",\"params\":" << r.params << ",\"padded_params\":" << r.params << ",\"device\":\"cpu\","
    << "\"config\":{\"model\":{\"n_layer\":" << r.n_layer << ",\"n_head\":4,\"n_embd\":" << r.n_embd
    << ",\"vocab_size\":256,\"seq_len\":" << r.seq_len
    << "},\"train\":{\"micro_batch\":" << r.micro_batch
    << ",\"global_batch_tokens\":" << r.global_tokens << "},\"zero\":{\"stage\":" << r.stage
    << ",\"reduce_scatter\":" << tf[r.reduce_scatter] << "}},\"zero\":{\"stage\":" << r.stage
    << ",\"grad_path\":\"" << r.grad_path << "\",\"reduce_bucket_size\":" << r.bucket
    << ",\"allgather_bucket_size\":500000000,"
    << "\"overlap_comm\":" << tf[r.overlap] << ",\"allgather_bucketed\":false},"
    << "\"comm\":{\"per_step_by_purpose\":{\"gradients\":{"
    << per_step_json("all_reduce", r.all_reduce) << ","
    << per_step_json("reduce_scatter", r.reduce_scatter_bytes) << ","
    << per_step_json("all_gather", {0, 0}) << "," << per_step_json("reduce", r.reduce)
    << "},\"parameters\":{" << per_step_json("all_gather", r.all_gather) << "},\"scalars\":{"
    << per_step_json("all_reduce", {8, 12}) << "}},\"per_step_by_dimension\":{\"data\":{"
    << per_step_json("all_reduce", {90, 100, 40}) << "},\"tensor\":{"
    << per_step_json("all_reduce", {5, 7, 0}) << "," << per_step_json("all_gather", {2, 3, 1})
    << "},\"pipeline\":{" << per_step_json("send", {50, 50, 50}) << ","
    << per_step_json("recv", {50, 0, 0}) << "}},\"exposed_seconds\":" << 5 * r.exposed_s
    << ",\"exposed_seconds_per_step\":" << r.exposed_s << "},"
    << "\"memory\":{\"model_states\":" << r.model_states << ",\"peak_total\":" << r.peak_total
    << "}}\n";
  return o.str();
}

void write_run(const fs::path& runs_dir, const FakeRun& r) {
  fs::create_directories(runs_dir / r.name);
  std::ofstream(runs_dir / r.name / "summary.json") << summary_json(r);
}

// The CSV as rows of named fields (run names here have no commas or quotes).
std::map<std::string, std::map<std::string, std::string>> parse_csv(
    const std::string& csv, std::vector<std::string>* order) {
  std::istringstream in(csv);
  std::string line;
  auto split = [](const std::string& s) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(s);
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    if (!s.empty() && s.back() == ',') f.push_back("");
    return f;
  };
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::map<std::string, std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split(line);
    REQUIRE(f.size() == header.size());
    for (size_t i = 0; i < f.size(); i++) rows[f[0]][header[i]] = f[i];
    order->push_back(f[0]);
  }
  return rows;
}

double num(const std::string& s) { return std::stod(s); }

// The CSV keeps 12 significant digits.
bool close(double got, double want) {
  return std::fabs(got - want) <= 1e-11 * std::max(1.0, std::fabs(want));
}

// A sweep-like directory: every stage, DeepSpeed's default next to the other
// paths, two runs without a baseline (another bucket, overlap on) and one
// directory without a summary.
std::vector<FakeRun> make_runs(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> world_pick(0, 3), accum_pick(1, 4);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  const int worlds[] = {2, 3, 4, 8};
  const int W = worlds[world_pick(rng)], accum = accum_pick(rng);
  const int64_t params = 100000 + 4 * (rng() % 50000);
  auto run = [&](const std::string& name, int stage, const std::string& path) {
    FakeRun r;
    r.name = name;
    r.stage = stage;
    r.grad_path = path;
    r.world = W;
    r.params = params;
    r.global_tokens = int64_t(r.micro_batch) * r.seq_len * W * accum;
    r.tok_s = 10000 * u(rng);
    r.step_ms = 100 * u(rng);
    r.exposed_s = 0.01 * u(rng);
    r.model_states = double(16 * params / (stage + 1));
    r.peak_total = r.model_states * 3;
    const double grad = 4.0 * params * (stage == 2 ? accum : 1);
    if (path == "per_owner_reduce") r.reduce = {grad, grad};
    else if (path == "reduce_scatter") r.reduce_scatter_bytes = {grad, grad * (W - 1) / W};
    else r.all_reduce = {grad, grad * 2 * (W - 1) / W};
    if (stage > 0) r.all_gather = {4.0 * params, 4.0 * params * (W - 1) / W};
    for (Bytes* b : {&r.all_reduce, &r.reduce, &r.reduce_scatter_bytes, &r.all_gather})
      b->inter = b->bus * u(rng);  // any share of it may cross nodes
    return r;
  };
  std::vector<FakeRun> runs = {run("a-s0", 0, "allreduce"),
                               run("b-s1-ds", 1, "multi_rank_allreduce"),
                               run("c-s1-owner", 1, "per_owner_reduce"),
                               run("d-s1-rs", 1, "reduce_scatter"),
                               run("e-s2-owner-2e8", 2, "per_owner_reduce"),
                               run("f-s2-ds", 2, "multi_rank_allreduce"),
                               run("g-s2-rs-overlap", 2, "reduce_scatter"),
                               run("h-s3-rs", 3, "reduce_scatter"),
                               run("i-s3-ar", 3, "allreduce")};
  runs[4].bucket = 200000000;
  runs[6].overlap = true;
  runs[8].reduce_scatter = false;
  return runs;
}

}  // namespace

TEST_CASE("report rows: configuration, throughput, gradient bytes and speed-ups", "[report]") {
  std::mt19937_64 rng = test_rng(501);
  TestDir dir("zt_test_report");
  const std::vector<FakeRun> runs = make_runs(rng);
  for (const FakeRun& r : runs) write_run(dir.path, r);
  fs::create_directories(dir.file("zz-failed"));

  const RunsDir loaded = load_runs_dir(dir.path);
  CHECK(loaded.without_summary == std::vector<std::string>{"zz-failed"});
  std::vector<std::string> order;
  auto csv = parse_csv(report_csv(loaded.rows), &order);
  REQUIRE(csv.size() == runs.size());
  // Stage first, then DeepSpeed's default before per-owner before reduce-scatter.
  CHECK(order == std::vector<std::string>{"a-s0", "b-s1-ds", "c-s1-owner", "d-s1-rs", "f-s2-ds",
                                          "e-s2-owner-2e8", "g-s2-rs-overlap", "i-s3-ar",
                                          "h-s3-rs"});

  std::map<std::string, const FakeRun*> by_name;
  for (const FakeRun& r : runs) by_name[r.name] = &r;
  for (const FakeRun& r : runs) {
    INFO("run " << r.name);
    auto& row = csv.at(r.name);
    const int W = r.world;
    CHECK(row["stage"] == std::to_string(r.stage));
    CHECK(row["grad_path"] == r.grad_path);
    CHECK(num(row["reduce_bucket_size"]) == r.bucket);
    CHECK(row["overlap_comm"] == (r.overlap ? "true" : "false"));
    CHECK(row["micro_batch"] == std::to_string(r.micro_batch));
    CHECK(num(row["accum_steps"]) * r.micro_batch * r.seq_len * W == r.global_tokens);
    CHECK(row["world"] == std::to_string(W));
    CHECK(close(num(row["tokens_per_second"]), r.tok_s));
    const double flops = 6.0 * r.params + 6.0 * r.n_layer * r.n_embd * r.seq_len;
    CHECK(close(num(row["tflops_per_gpu"]), r.tok_s * flops / W / 1e12));
    CHECK(close(num(row["step_ms"]), r.step_ms));
    CHECK(close(num(row["exposed_comm_ms_per_step"]), r.exposed_s * 1e3));
    // Each grid dimension's bus bytes over its primitives, and the inter-node part.
    CHECK(num(row["data_bus_bytes"]) == 100);
    CHECK(num(row["data_inter_node_bus_bytes"]) == 40);
    CHECK(num(row["tensor_bus_bytes"]) == 10);
    CHECK(num(row["tensor_inter_node_bus_bytes"]) == 1);
    CHECK(num(row["pipeline_bus_bytes"]) == 50);
    CHECK(num(row["pipeline_inter_node_bus_bytes"]) == 50);

    // Gradients only: the summary counts norms as scalars, which the columns leave out.
    CHECK(close(num(row["grad_all_reduce_bytes"]), r.all_reduce.payload));
    CHECK(close(num(row["grad_all_reduce_bus_bytes"]), r.all_reduce.bus));
    CHECK(close(num(row["grad_reduce_bytes"]), r.reduce.payload));
    CHECK(close(num(row["grad_reduce_bus_bytes"]), r.reduce.bus));
    CHECK(close(num(row["grad_reduce_scatter_bytes"]), r.reduce_scatter_bytes.payload));
    CHECK(close(num(row["grad_reduce_scatter_bus_bytes"]), r.reduce_scatter_bytes.bus));
    CHECK(close(num(row["param_all_gather_bytes"]), r.all_gather.payload));
    CHECK(close(
        num(row["inter_node_bus_bytes"]),
        r.all_reduce.inter + r.reduce.inter + r.reduce_scatter_bytes.inter + r.all_gather.inter));
    CHECK(close(num(row["model_states_bytes"]), r.model_states));
    CHECK(close(num(row["peak_total_bytes"]), r.peak_total));
  }

  // Speed-ups: against DeepSpeed's default path with the same settings.
  const std::map<std::string, std::string> expected_baseline = {
      {"a-s0", "a-s0"},        {"b-s1-ds", "b-s1-ds"}, {"c-s1-owner", "b-s1-ds"},
      {"d-s1-rs", "b-s1-ds"},  {"e-s2-owner-2e8", ""}, {"f-s2-ds", "f-s2-ds"},
      {"g-s2-rs-overlap", ""}, {"h-s3-rs", "h-s3-rs"}, {"i-s3-ar", "h-s3-rs"}};
  for (const auto& [name, base] : expected_baseline) {
    INFO("run " << name);
    auto& row = csv.at(name);
    CHECK(row["baseline_run"] == base);
    if (base.empty()) {
      CHECK(row["speedup_vs_ds_default"].empty());
    } else {
      CHECK(close(num(row["speedup_vs_ds_default"]), by_name[name]->tok_s / by_name[base]->tok_s));
    }
  }

  // The Markdown table: one line per run, "—" exactly where no baseline ran.
  const std::string md = report_markdown_table(loaded.rows);
  std::istringstream lines(md);
  std::string line;
  int table_rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| run ", 0) == 0 || line.rfind("| --- ", 0) == 0)
      continue;
    table_rows++;
    const std::string run = line.substr(2, line.find(' ', 2) - 2);
    INFO(line);
    const std::string no_speedup = "| — |";
    const bool dash =
        line.size() >= no_speedup.size() &&
        line.compare(line.size() - no_speedup.size(), no_speedup.size(), no_speedup) == 0;
    CHECK(dash == expected_baseline.at(run).empty());
    CHECK((line.find("(DS default)") != std::string::npos) ==
          (run == "b-s1-ds" || run == "f-s2-ds" || run == "h-s3-rs"));
  }
  CHECK(table_rows == int(runs.size()));
}

TEST_CASE("report labels say which speed-up each column shows", "[report]") {
  std::mt19937_64 rng = test_rng(505);
  TestDir dir("zt_test_report");
  for (const FakeRun& r : make_runs(rng)) write_run(dir.path, r);
  std::vector<ReportRow> rows = load_runs_dir(dir.path).rows;

  const std::string md = report_markdown_table(rows);
  CHECK(md.rfind("| run ", 0) == 0);
  CHECK(md.substr(0, md.find('\n')).find("| speed-up (tokens/s) vs DS default |") !=
        std::string::npos);
  const std::string caption = report_caption();
  CHECK(caption.find("**speed-up (tokens/s)**: tok/s over the run") != std::string::npos);
  CHECK(caption.find("**speed-up (median step)**") != std::string::npos);

  // The step-time model's table divides median steps, measured and predicted.
  ReportRow& owner = rows.at(2);
  REQUIRE(owner.run == "c-s1-owner");
  owner.has_prediction = true;
  owner.predicted_step_ms = 2 * owner.step_ms;
  owner.step_speedup = 1.25;
  owner.predicted_speedup = 1.5;
  const std::string predicted = report_prediction_table(rows);
  const std::string header = predicted.substr(0, predicted.find('\n'));
  CHECK(header.find("| speed-up (median step) measured | speed-up (median step) predicted |") !=
        std::string::npos);
  CHECK(header.find("tokens/s") == std::string::npos);
  CHECK(predicted.find("| c-s1-owner | 1 | per_owner_reduce |") != std::string::npos);
  CHECK(predicted.find("| 1.25x | 1.50x |") != std::string::npos);
}

TEST_CASE("report command writes report.md and report.csv", "[report]") {
  std::mt19937_64 rng = test_rng(502);
  TestDir dir("zt_test_report");
  for (const FakeRun& r : make_runs(rng)) write_run(dir.file("runs"), r);
  const std::string out = dir.file("out");
  REQUIRE(run_report_command({dir.file("runs"), "--out", out, "--no-plots"}) == 0);
  std::ifstream csv_file(out + "/report.csv"), md_file(out + "/report.md");
  std::stringstream csv, md;
  csv << csv_file.rdbuf();
  md << md_file.rdbuf();
  CHECK(csv.str() == report_csv(load_runs_dir(dir.file("runs")).rows));
  CHECK(md.str().find(report_markdown_table(load_runs_dir(dir.file("runs")).rows)) !=
        std::string::npos);
  CHECK(md.str().find("6·N + 6·L·C·T") != std::string::npos);
  CHECK(md.str().find("Plots skipped: --no-plots") != std::string::npos);
  CHECK_FALSE(fs::exists(out + "/throughput.png"));

  CHECK_THROWS_AS(run_report_command({}), ConfigError);
  CHECK_THROWS_AS(run_report_command({out, "--bogus"}), ConfigError);
  CHECK(run_report_command({dir.file("missing"), "--no-plots"}) == 2);
}

TEST_CASE("report errors are one line naming what is wrong", "[report]") {
  std::mt19937_64 rng = test_rng(503);
  auto runs_error = [](const std::string& runs_dir) {
    const std::string msg = error_of<std::runtime_error>([&] { load_runs_dir(runs_dir); });
    if (msg.empty()) FAIL("no error for " << runs_dir);
    CHECK(msg.find('\n') == std::string::npos);
    return msg;
  };
  TestDir dir("zt_test_report");
  CHECK(runs_error(dir.file("absent")).find("not a directory") != std::string::npos);
  CHECK(runs_error(dir.path).find("no summary.json") != std::string::npos);

  FakeRun good = make_runs(rng)[1];
  write_run(dir.path, good);
  fs::create_directories(dir.file("broken"));
  const std::string broken = dir.file("broken/summary.json");
  std::ofstream(broken) << "{\"world_size\": 4, \"steps\": [";
  std::string msg = runs_error(dir.path);
  // Our JSON reader's words, with line and column; nothing of yaml-cpp's.
  require_parts(msg,
                {broken + ":1:", "JSON", "(a truncated summary.json, or not one zerotrain wrote)"});
  CHECK(msg.find("yaml") == std::string::npos);
  // A directory or a FIFO where summary.json belongs: named by its kind, no hang.
  fs::remove(broken);
  fs::create_directories(broken);
  require_parts(runs_error(dir.path), {broken, "it is a directory, expected a regular file"});
  fs::remove(broken);
  REQUIRE(::mkfifo(broken.c_str(), 0600) == 0);
  require_parts(runs_error(dir.path),
                {broken, "it is a named pipe (FIFO), expected a regular file"});
  fs::remove(broken);
  // Found by fuzz/targets/run_summary: control bytes in a message stay one line.
  std::ofstream(broken, std::ios::binary) << std::string("\0\r\0\0\0\n\nN", 8);
  msg = runs_error(dir.path);
  CHECK(msg.rfind(broken + ":", 0) == 0);

  std::string text = summary_json(good);
  const std::string key = "\"reduce\":{\"calls\":1,\"bytes\":";
  const size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  text.replace(at, key.size(), "\"reduce\":{\"calls\":1,\"bytez\":");
  std::ofstream(broken) << text;
  msg = runs_error(dir.path);
  CHECK(msg.rfind(broken + ": unreadable summary", 0) == 0);
  CHECK(msg.find("missing key 'comm.per_step_by_purpose.gradients.reduce.bytes'") !=
        std::string::npos);

  good.name = "broken";
  text = summary_json(good);
  const size_t tok = text.find("\"tokens_per_second\":");
  text.replace(tok, text.find(',', tok) - tok, "\"tokens_per_second\":\"fast\"");
  std::ofstream(broken) << text;
  msg = runs_error(dir.path);
  CHECK(msg.find("key 'tokens_per_second': expected a finite number, got 'fast'") !=
        std::string::npos);

  // Found by fuzz/targets/run_summary: a stage that select_grad_path does not
  // know escaped as its std::logic_error. An integer beyond int64 (a cast that
  // was undefined) is refused the same way.
  text = summary_json(good);
  const std::string stage_key = "\"zero\":{\"stage\":";
  const size_t stage = text.rfind(stage_key);
  REQUIRE(stage != std::string::npos);
  text.insert(stage + stage_key.size(), "4");
  std::ofstream(broken) << text;
  msg = runs_error(dir.path);
  CHECK(msg.find("key 'zero.stage': expected 0, 1, 2 or 3, got 4") != std::string::npos);
  text = summary_json(good);
  const size_t world = text.find("\"world_size\":");
  text.replace(world, text.find(',', world) - world, "\"world_size\":1e300");
  std::ofstream(broken) << text;
  msg = runs_error(dir.path);
  CHECK(msg.find("key 'world_size': expected an integer, got '1e300'") != std::string::npos);
}

TEST_CASE("flops per token: 6N + 6LCT", "[report]") {
  // GPT-2 124M with the padded vocabulary: 124475904 parameters, 12 x 768, T = 1024.
  CHECK(flops_per_token(124475904, 12, 768, 1024) == 6.0 * 124475904 + 6.0 * 12 * 768 * 1024);
  std::mt19937_64 rng = test_rng(504);
  const int64_t n = 1000 + int64_t(rng() % 1000000);
  const int L = 1 + int(rng() % 48), C = 64 * (1 + int(rng() % 32)), T = 1 << (6 + rng() % 6);
  CHECK(close(flops_per_token(n, L, C, T) - flops_per_token(n, L, C, T / 2), 3.0 * L * C * T));
  CHECK(close(flops_per_token(n + 1, L, C, T) - flops_per_token(n, L, C, T), 6.0));
}

}  // namespace zt
