// Checkpoints through a real engine (one rank): what is saved loads back bit
// for bit at every stage; --resume falls back past a corrupt checkpoint and
// says why; a different model or tokenizer is refused naming the key; a write
// that fails (file-size limit) leaves no temporary directory; pruning keeps the
// newest. Also the checked writers themselves (train/io/atomic_file.h).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "data/input/input_file.h"
#include "data/shard.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/support_zero.h"
#include "tests/support/test_support.h"
#include "train/config/config.h"
#include "train/io/atomic_file.h"
#include "train/io/checkpoint.h"
#include "train/loop/runtime.h"
#include "zero/comm/communicators.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

GPTConfig shape() { return gpt_shape(2, 2, 16, 41, 8); }

// A one-rank engine whose optimizer state (master, m, v) is random.
struct Engine {
  std::unique_ptr<Ops> ops = make_cpu_ops();
  std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
  ParamTable table{shape()};
  std::unique_ptr<ZeroEngine> engine;
  explicit Engine(int stage) {
    ZeroConfig z;
    z.stage = stage;
    engine = make_zero_engine(engine_setup(z, table, 0), table, *ops, *comm);
    std::vector<float> w(table.total(), 0.0f);
    engine->init_weights(w.data());
  }
  void randomize(uint64_t salt) {
    std::mt19937_64 rng(test_seed() + salt);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const size_t n = engine->optimizer().shard_size();
    std::vector<float> state[3] = {std::vector<float>(n), std::vector<float>(n),
                                   std::vector<float>(n)};
    for (auto& s : state)
      for (float& x : s) x = normal(rng);
    for (float& x : state[2]) x = std::fabs(x);
    engine->optimizer().load_state(state[0], state[1], state[2]);
    engine->refresh_params_from_master();
  }
  // State array k (0 master, 1 m, 2 v) of every owned piece, in the flat layout
  // (the shard's padding, which no checkpoint holds, left out).
  std::vector<float> state(int k) {
    std::vector<float> s[3];
    engine->optimizer().save_state(s[0], s[1], s[2]);
    std::vector<float> flat(table.total(), 0.0f);
    for (const OptimPiece& p : engine->optimizer().pieces())
      std::copy(s[k].begin() + p.shard_offset, s[k].begin() + p.shard_offset + p.n,
                flat.begin() + p.flat_begin);
    return flat;
  }
};

CheckpointContext context(const std::string& run_dir, int keep = 5) {
  CheckpointContext c;
  c.run_dir = run_dir;
  c.model = shape();
  c.keep = keep;
  c.config_yaml = "model:\n  n_layer: 2\n";
  c.config_json = "{\"model\":{\"n_layer\":2}}";
  c.tokenizer = tokenizer_identity("byte");
  c.model_dtype = "fp32";
  c.device = "cpu";
  return c;
}

std::string step_dir(const std::string& run, int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/checkpoints/step_%08lld", static_cast<long long>(step));
  return run + buf;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5A));
}

std::string dir_entries(const std::string& dir) {
  std::string names;
  for (const auto& e : fs::directory_iterator(dir)) names += e.path().filename().string() + " ";
  return names;
}

}  // namespace

TEST_CASE("a saved checkpoint loads back bit for bit at every stage", "[checkpoint]") {
  TestDir dir("zt_test_ckpt");
  for (int stage = 0; stage <= 3; stage++) {
    INFO("stage " << stage);
    const std::string run = dir.file("run" + std::to_string(stage));
    fs::create_directories(run);
    Engine saved(stage);
    saved.randomize(200 + stage);
    save_checkpoint(context(run), 7, *saved.engine, 0, 1);
    const CheckpointMeta meta = read_checkpoint_meta(step_dir(run, 7));
    CHECK(meta.step == 7);
    CHECK(meta.stage == stage);
    CHECK(meta.params == saved.table.total());

    for (int load_stage : {0, 3}) {
      Engine loaded(load_stage);
      std::vector<std::string> rejected;
      const ResumePoint p =
          resume_from_checkpoint(run, shape(), {}, tokenizer_identity("byte"), *loaded.engine,
                                 [&](const std::string& why) { rejected.push_back(why); });
      CHECK(rejected.empty());
      REQUIRE(p.dir == step_dir(run, 7));
      // Compare in the flat layout: the weights every stage gathers alike.
      CHECK(loaded.engine->gather_master(*loaded.ops, *loaded.comm, loaded.table.total()) ==
            saved.engine->gather_master(*saved.ops, *saved.comm, saved.table.total()));
      for (int k = 0; k < 3; k++) CHECK(loaded.state(k) == saved.state(k));
    }
    CHECK(read_checkpoint_weights(step_dir(run, 7), meta) ==
          saved.engine->gather_master(*saved.ops, *saved.comm, saved.table.total()));
  }
}

TEST_CASE("--resume falls back past corrupt checkpoints and refuses another model",
          "[checkpoint]") {
  TestDir dir("zt_test_ckpt");
  const std::string run = dir.file("run");
  fs::create_directories(run);
  Engine e(1);
  e.randomize(300);
  save_checkpoint(context(run), 2, *e.engine, 0, 1);
  const std::vector<float> at_two = e.state(0);
  e.randomize(301);
  save_checkpoint(context(run), 4, *e.engine, 0, 1);

  auto resume = [&](std::vector<std::string>* rejected, const GPTConfig& model = shape(),
                    const std::string& tokenizer = "byte") {
    Engine fresh(1);
    const ResumePoint p =
        resume_from_checkpoint(run, model, {}, tokenizer_identity(tokenizer), *fresh.engine,
                               [&](const std::string& why) { rejected->push_back(why); });
    if (!p.dir.empty()) CHECK(fresh.state(0) == (p.meta.step == 2 ? at_two : e.state(0)));
    return p;
  };

  std::mt19937_64 rng(test_seed() + 302);
  const std::string newest = step_dir(run, 4);
  const uint64_t size = fs::file_size(newest + "/rank_00000.bin");
  struct Corruption {
    std::string file;
    uint64_t offset;
    std::string expected;
  };
  for (const Corruption& c :
       // The second half of a rank file is data: the header and piece table
       // (48 + 16 bytes a piece) end well before it.
       {Corruption{"rank_00000.bin", size / 2 + rng() % (size - size / 2),
                   "data checksum mismatch"},
        Corruption{"rank_00000.bin", 9, "header checksum mismatch"},
        Corruption{"meta.json", 3, "checksum mismatch (COMPLETE records"},
        Corruption{"config.yaml", 0, "config.yaml: checksum mismatch (meta.json records"},
        Corruption{"COMPLETE", 0, "COMPLETE: expected one line"}}) {
    INFO(c.file << " at byte " << c.offset);
    fs::copy(newest, dir.file("keep"), fs::copy_options::recursive);
    flip_byte(newest + "/" + c.file, c.offset);
    std::vector<std::string> rejected;
    const ResumePoint p = resume(&rejected);
    CHECK(p.dir == step_dir(run, 2));
    CHECK(p.rejected == 1);
    REQUIRE(rejected.size() == 1);
    require_parts(rejected[0], {newest, c.expected});
    fs::remove_all(newest);
    fs::rename(dir.file("keep"), newest);
  }

  SECTION("a truncated or missing rank file") {
    fs::resize_file(newest + "/rank_00000.bin", size - 1);
    std::vector<std::string> rejected;
    CHECK(resume(&rejected).dir == step_dir(run, 2));
    fs::remove(step_dir(run, 2) + "/rank_00000.bin");
    rejected.clear();
    try {
      resume(&rejected);
      FAIL("resumed from nothing");
    } catch (const DataError& err) {
      require_parts(err.what(), {run + "/checkpoints", "none of the 2 complete checkpoints"});
    }
    REQUIRE(rejected.size() == 2);
    CHECK(rejected[1].find("rank_00000.bin: cannot open checkpoint shard") != std::string::npos);
  }
  SECTION("another model shape or tokenizer") {
    GPTConfig other = shape();
    other.n_layer = 1;
    std::vector<std::string> rejected;
    try {
      resume(&rejected, other);
      FAIL("resumed into another shape");
    } catch (const ConfigError& err) {
      require_parts(err.what(),
                    {newest, "model.n_layer is 2 in the checkpoint but 1 in the config"});
    }
    other = shape();
    other.vocab_size = 64;
    auto config_error = [&](const GPTConfig& model, const std::string& tokenizer) {
      return error_of<ConfigError>([&] { resume(&rejected, model, tokenizer); });
    };
    require_parts(config_error(other, "byte"),
                  {"model.vocab_size is 41 in the checkpoint but 64 in the config"});
    TestDir tok("zt_test_tok");
    std::ofstream(tok.file("t.model")) << "not really a model";
    require_parts(config_error(shape(), tok.file("t.model")),
                  {"data.tokenizer is 'byte' in the checkpoint but '" + tok.file("t.model")});
    CHECK(rejected.empty());
  }
}

TEST_CASE("a whole rank file from another checkpoint of the same step is rejected",
          "[checkpoint]") {
  // Its own header and data checksums are right; only meta.json's record of the
  // file's size and CRC-32 tells it apart.
  TestDir dir("zt_test_ckpt");
  const std::string a = dir.file("a"), b = dir.file("b");
  fs::create_directories(a);
  fs::create_directories(b);
  Engine e(2);
  e.randomize(400);
  save_checkpoint(context(a), 6, *e.engine, 0, 1);
  e.randomize(401);
  save_checkpoint(context(b), 6, *e.engine, 0, 1);
  fs::copy_file(step_dir(b, 6) + "/rank_00000.bin", step_dir(a, 6) + "/rank_00000.bin",
                fs::copy_options::overwrite_existing);
  const CheckpointMeta meta = read_checkpoint_meta(step_dir(a, 6));
  auto weights_error = [&] {
    return error_of<DataError>([&] { read_checkpoint_weights(step_dir(a, 6), meta); });
  };
  require_parts(weights_error(),
                {step_dir(a, 6) + "/rank_00000.bin: file checksum mismatch (meta.json"});

  // One of the same size from another step: its header says so.
  save_checkpoint(context(b), 7, *e.engine, 0, 1);
  fs::copy_file(step_dir(b, 7) + "/rank_00000.bin", step_dir(a, 6) + "/rank_00000.bin",
                fs::copy_options::overwrite_existing);
  require_parts(weights_error(),
                {step_dir(a, 6) + "/rank_00000.bin: the header says step 7, world 1, "
                                  "rank 0; meta.json says step 6"});
}

// A grid rank's optimizer pieces, cut at arbitrary points as ZeRO's
// partitions cut them, land on the whole model's elements that rank holds:
// the whole model's weights are their own flat indices, so a rank's part
// (take_shard) holds at each of its elements the whole-model index that
// element must be saved at.
TEST_CASE("a grid rank's pieces map onto the whole model's layout", "[checkpoint][grid]") {
  const GPTConfig c = gpt_shape(2, 4, 8, 12, 5);
  const ParamTable whole(c);
  std::vector<float> index(whole.total());
  std::iota(index.begin(), index.end(), 0.0f);
  for (int T : {1, 2, 4})
    for (int P : {1, 2}) {
      std::vector<int> covered(whole.total(), 0);
      for (int t = 0; t < T; t++)
        for (int s = 0; s < P; s++) {
          const ParamTable part(c, TensorSplit{T, t}, stage_split(c.n_layer, P, s));
          const std::vector<float> held = take_shard(whole, part, index.data());
          std::vector<OptimPiece> pieces;
          const size_t kShardBase = 1000;
          for (size_t at = 0, len = 1; at < part.total(); at += len, len = len % 37 + 5) {
            const size_t n = std::min(len, part.total() - at);
            pieces.push_back({at, at, kShardBase + at, n, true, 0, true});
          }
          const std::vector<OptimPiece> mapped =
              whole_model_pieces(pieces, whole_runs(whole, part));
          if (T == 1 && P == 1) CHECK(mapped.size() == pieces.size());
          size_t total = 0;
          bool placed = true;
          for (const OptimPiece& m : mapped) {
            total += m.n;
            CHECK(m.layout_offset + kShardBase == m.shard_offset);
            for (size_t i = 0; i < m.n; i++) {
              placed = placed && held[m.shard_offset - kShardBase + i] == float(m.flat_begin + i);
              covered[m.flat_begin + i]++;
            }
          }
          CHECK(placed);
          CHECK(total == part.total());
        }
      // Every element of the whole model is some rank's; whole tensors are
      // on every tensor rank, wte on the first and the last stage.
      const size_t wte = whole.find("wte.weight")->numel;
      CHECK(std::count(covered.begin(), covered.end(), 0) == 0);
      CHECK(std::count(covered.begin(), covered.begin() + static_cast<long>(wte), P == 1 ? 1 : 2) ==
            static_cast<long>(wte));
    }
}

TEST_CASE("pruning keeps the newest checkpoints up to the current step", "[checkpoint]") {
  TestDir dir("zt_test_ckpt");
  const std::string run = dir.file("run");
  fs::create_directories(run + "/checkpoints/step_00000003.tmp");  // a killed job's leftover
  Engine e(0);
  for (int64_t step : {1, 2, 9, 4, 5}) save_checkpoint(context(run, 2), step, *e.engine, 0, 1);
  std::vector<std::string> names;
  for (const std::string& d : complete_checkpoints(run)) names.push_back(fs::path(d).filename());
  // 9 was written by an abandoned future (a run resumed from 2): kept until rewritten.
  CHECK(names == std::vector<std::string>{"step_00000004", "step_00000005", "step_00000009"});
  CHECK(!fs::exists(run + "/checkpoints/step_00000003.tmp"));
}

TEST_CASE("a checkpoint write that fails leaves no temporary directory", "[checkpoint]") {
  TestDir dir("zt_test_ckpt");
  const std::string run = dir.file("run");
  fs::create_directories(run);
  Engine e(2);
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  std::fflush(stdout);  // nothing may reach the (large) test log while the limit holds
  rlimit small = old;
  small.rlim_cur = 4096;  // smaller than the rank file
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string message =
      error_of<JobError>([&] { save_checkpoint(context(run), 3, *e.engine, 0, 1); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  require_parts(message, {"rank_00000.bin: cannot write: File too large"});
  CHECK(dir_entries(run + "/checkpoints").empty());
}

TEST_CASE("AppendFile cuts a line that cannot be written whole; AtomicFile leaves nothing",
          "[checkpoint]") {
  TestDir dir("zt_test_atomic");
  const std::string log = dir.file("metrics.jsonl");
  {
    AppendFile f(log);
    for (int i = 0; i < 30; i++) f.append_line("{\"step\":" + std::to_string(i) + "}");
  }
  const uint64_t before = fs::file_size(log);
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  std::fflush(stdout);
  rlimit small = old;
  small.rlim_cur = before + 10;  // the next line only partly fits
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string append_error = error_of<IoError>([&] {
    AppendFile f(log);
    f.append_line("{\"step\":30,\"loss\":1.2345678901234567}");
  });
  const std::string atomic_error = error_of<IoError>(
      [&] { write_file_atomic(dir.file("summary.json"), std::string(before + 100, 'x')); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  require_parts(append_error, {log + ": cannot write: File too large"});
  CHECK(fs::file_size(log) == before);
  require_parts(atomic_error, {dir.file("summary.json") + ": cannot write: File too large"});
  CHECK(dir_entries(dir.path) == "metrics.jsonl ");
}

}  // namespace zt
