// HellaSwag: the JSON reader, the JSONL file's one-line errors, and the
// scorer's losses against a direct computation (one forward per predicted
// token, log-softmax in double) on a random model, at every rank of W = 1..3,
// with rows cut to the model's window. The end-to-end test
// (tests/e2e/gpt2_pipeline.sh) checks that a trained model gets answers right.
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "data/hellaswag_file.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/io/run_outputs.h"
#include "train/loop/hellaswag.h"
#include "train/loop/init_weights.h"

namespace zt {
namespace {

// Counts forwards: every forward fetches the root module first.
class CountingHooks : public ModuleHooks {
 public:
  explicit CountingHooks(FlatHooks& inner) : inner_(inner) {}
  const void* const* fetch(int module, bool backward) override {
    if (module == 0 && !backward) ++forwards_started;
    return inner_.fetch(module, backward);
  }
  void release(int module, bool backward) override { inner_.release(module, backward); }
  void* grad(int param) override { return inner_.grad(param); }
  void grad_ready(int param) override { inner_.grad_ready(param); }
  int forwards_started = 0;

 private:
  FlatHooks& inner_;
};

std::string random_words(std::mt19937_64& rng, int words) {
  static const char* pool[] = {"and",   "the", "LORD",  "said", "unto", "Moses", "go",
                               "forth", "in",  "peace", "zq",   "xj",   "kkv",   "."};
  std::string s;
  for (int i = 0; i < words; ++i) s += std::string(i ? " " : "") + pool[rng() % 14];
  return s;
}

// Cross-entropy of each ending token straight from the logits, one forward per token.
EndingLoss direct_loss(GPT& one_row, ModuleHooks& hooks, std::vector<int> row, size_t context,
                       int T) {
  const size_t keep = std::min(row.size(), size_t(T) + 1), offset = row.size() - keep;
  EndingLoss out;
  for (size_t j = std::max(context, offset + 1); j < row.size(); ++j) {
    const int t = int(j - offset);
    const std::vector<float> logits =
        one_row.forward_logits(row.data() + offset, 1, t, t - 1, hooks);
    double max = logits[0];
    for (float l : logits) max = std::max(max, double(l));
    double sum = 0;
    for (float l : logits) sum += std::exp(double(l) - max);
    out.sum += max + std::log(sum) - double(logits[size_t(row[j])]);
    ++out.tokens;
  }
  return out;
}

}  // namespace

TEST_CASE("hellaswag file: the public format, and one-line errors naming the line", "[hellaswag]") {
  TestFile good(
      "{\"ind\": 24, \"activity_label\": \"Roof shingle removal\", \"ctx_a\": \"A man\", "
      "\"ctx\": \"A man is sitting on a roof. he\", \"split\": \"val\", \"label\": 3, "
      "\"endings\": [\"is using wrap.\", \"is ripping level tiles off.\", \"is holding a rubik's "
      "cube.\", \"starts pulling up roofing on a roof.\"], \"source_id\": \"x\"}\n"
      "\n"
      "{\"ctx\": \"caf\\u00e9 \\ud83d\\ude00\", \"endings\": [\"a\", \"b\", \"c\", \"d\"], "
      "\"label\": \"1\"}\n");
  const std::vector<HellaswagExample> ex = read_hellaswag(good.path);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].context == "A man is sitting on a roof. he");
  CHECK(ex[0].endings[3] == "starts pulling up roofing on a roof.");
  CHECK(ex[0].label == 3);
  CHECK(ex[1].context == "caf\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(ex[1].label == 1);
  CHECK(ex[1].line == 3);

  const std::string ok =
      "{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\", \"d\"], \"label\": 0}\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"ctx\": \"c\", ", ":2:14: JSON syntax error: expected '}' to close the object"},
      {"[1, 2]", ":2: expected an object, got an array of 2"},
      {"{\"endings\": [], \"label\": 0}", ":2: no key 'ctx'"},
      {"{\"ctx\": \"\", \"endings\": [], \"label\": 0}",
       ":2: key 'ctx': expected a non-empty string, got an empty one"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\"], \"label\": 0}",
       ":2: key 'endings': expected an array of 4 strings, got an array of 3"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", 5, \"d\"], \"label\": 0}",
       ":2: key 'endings': item 2: expected a non-empty string, got 5"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\", \"d\"], \"label\": 4}",
       ":2: key 'label': expected an integer in 0..3, got 4"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\", \"d\"], \"label\": 1.5}",
       ":2: key 'label': expected an integer in 0..3, got 1.5"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\", \"d\"], \"label\": \"x\"}",
       ":2: key 'label': expected an integer in 0..3, got 'x'"},
      {"{\"ctx\": \"c\", \"endings\": [\"a\", \"b\", \"c\", \"d\"]}", ":2: no key 'label'"},
  };
  for (const auto& [line, message] : bad) {
    TestFile f(ok + line + "\n" + ok);
    const std::string e = error_of([&] { read_hellaswag(f.path); });
    INFO(e);
    CHECK(e == f.path + message);
  }
  TestFile empty("\n  \n");
  CHECK(error_of([&] { read_hellaswag(empty.path); }) ==
        empty.path + ": no HellaSwag examples in the file");
  require_parts(error_of([] { read_hellaswag("/nonexistent/hellaswag_val.jsonl"); }),
                {"/nonexistent/hellaswag_val.jsonl: no such HellaSwag file"});
}

TEST_CASE("hellaswag: ending losses equal a direct computation at every rank", "[hellaswag]") {
  std::mt19937_64 rng(test_seed());
  const GPTConfig c = gpt_shape(2, 2, 32, 256, 64);
  ParamTable table(c);
  std::unique_ptr<Ops> ops = make_cpu_ops();
  FlatHooks flat(table, *ops);
  std::vector<float> w(table.total());
  init_gpt2_weights(table, rng(), w.data());
  for (float& x : w) x *= 6;  // logits far from uniform, so the endings' losses differ
  flat.set_params(w);

  ByteTokenizer bytes;
  // 7 or 13 examples: neither divides over 2 or 3 ranks, so rank 0 holds more
  // rows than the others and every rank must make rank 0's count of forwards.
  std::vector<HellaswagExample> raw(7 + 6 * (rng() % 2));
  for (HellaswagExample& ex : raw) {
    ex.context = random_words(rng, 1 + int(rng() % 8));
    for (std::string& e : ex.endings) e = random_words(rng, 1 + int(rng() % 4));
    ex.label = int(rng() % 4);
  }
  raw[0].context = random_words(rng, 30);  // longer than T = 16 below: the row is cut
  const HellaswagSet set = tokenize_hellaswag(raw, bytes, c.vocab_size, "test");
  CHECK(set.examples[0].endings[2] == bytes.encode(" " + raw[0].endings[2]));
  require_parts(error_of([&] { tokenize_hellaswag(raw, bytes, 100, "f.jsonl"); }),
                {"f.jsonl:0: token", "outside the model's vocabulary (100)"});

  for (int T : {64, 16}) {
    INFO("T = " << T);
    GPT one_row(table, *ops, 1, T);
    std::vector<std::array<EndingLoss, 4>> reference;
    for (const auto& ex : set.examples) {
      std::array<EndingLoss, 4> r;
      for (size_t k = 0; k < 4; ++k) {
        std::vector<int> row = ex.context;
        row.insert(row.end(), ex.endings[k].begin(), ex.endings[k].end());
        r[k] = direct_loss(one_row, flat, row, ex.context.size(), T);
      }
      reference.push_back(r);
    }
    HellaswagResult summed;
    for (int world : {1, 2, 3}) {
      int forwards = -1;
      for (int rank = 0; rank < world; ++rank) {
        GPT model(table, *ops, 3, T);  // 3 rows per forward: examples straddle forwards
        CountingHooks hooks(flat);
        const auto losses = hellaswag_losses(model, hooks, set, rank, world);
        REQUIRE(losses.size() == (set.examples.size() - size_t(rank) + world - 1) / size_t(world));
        for (size_t i = 0; i < losses.size(); ++i)
          for (size_t k = 0; k < 4; ++k) {
            const EndingLoss& want = reference[size_t(rank) + i * size_t(world)][k];
            CHECK(losses[i][k].tokens == want.tokens);
            CHECK(std::abs(losses[i][k].sum - want.sum) <= 1e-4 * std::max(1.0, want.sum));
          }
        if (forwards >= 0) CHECK(hooks.forwards_started == forwards);  // the same on every rank
        forwards = hooks.forwards_started;
        if (world == 3) {
          const HellaswagResult r =
              score_hellaswag(model, hooks, set, rank, world, [](double x) { return x; });
          summed.examples += r.examples;
          summed.correct += r.correct;
          summed.correct_norm += r.correct_norm;
          summed.rows_cut += r.rows_cut;
        }
      }
    }
    // The predictions from the reference losses. The engine's losses match them
    // only within the tolerance above, so an ending within that tolerance of the
    // lowest may win either way: such an example may count as correct or not.
    HellaswagResult certain, possible;
    for (size_t i = 0; i < reference.size(); ++i) {
      auto count = [&](auto loss_of, int64_t& sure, int64_t& maybe) {
        double lowest = loss_of(reference[i][0]);
        for (size_t k = 1; k < 4; ++k) lowest = std::min(lowest, loss_of(reference[i][k]));
        int near_lowest = 0;
        bool label_near = false;
        for (size_t k = 0; k < 4; ++k) {
          const double x = loss_of(reference[i][k]);
          const bool near = x - lowest <= 2e-4 * std::max(1.0, std::abs(x));
          near_lowest += near;
          if (near && int(k) == set.examples[i].label) label_near = true;
        }
        sure += label_near && near_lowest == 1;
        maybe += label_near;
      };
      count([](const EndingLoss& l) { return l.sum; }, certain.correct, possible.correct);
      count([](const EndingLoss& l) { return l.mean(); }, certain.correct_norm,
            possible.correct_norm);
    }
    CHECK(summed.correct >= certain.correct);
    CHECK(summed.correct <= possible.correct);
    CHECK(summed.correct_norm >= certain.correct_norm);
    CHECK(summed.correct_norm <= possible.correct_norm);
    CHECK(summed.examples == int64_t(set.examples.size()));
    int64_t long_rows = 0;
    for (const auto& ex : set.examples)
      for (const auto& ending : ex.endings)
        long_rows += ex.context.size() + ending.size() > size_t(T) + 1;
    CHECK(summed.rows_cut == long_rows);
    if (T == 16) CHECK(long_rows >= 4);
  }
  CHECK(hellaswag_positions(set, 1024) == int((set.longest_row - 1 + 15) / 16 * 16));
  CHECK(hellaswag_positions(set, 16) == 16);
  // Sequence parallelism over 3 ranks: the first multiple of 48 (16 and 3) that
  // holds the row, or seq_len (a multiple of 3) when that is shorter.
  const int needed = int(set.longest_row - 1), p3 = hellaswag_positions(set, 3 * 1024, 3);
  CHECK(p3 == std::min(3 * 1024, (needed + 47) / 48 * 48));
  CHECK(hellaswag_positions(set, 24, 3) == 24);
}

TEST_CASE("hellaswag: result line and the counts in metrics.jsonl across a resume", "[hellaswag]") {
  HellaswagResult r;
  r.examples = 10042;
  r.correct = 2952;
  r.correct_norm = 2967;
  CHECK(describe_hellaswag(r, "h.jsonl") ==
        "hellaswag: acc 0.2940 (2952/10042, lowest summed loss) | acc_norm 0.2955 (2967/10042, "
        "lowest mean loss per token) | h.jsonl");
  const TestDir run_dir("zt_hellaswag_run");
  const std::string& dir = run_dir.path;
  auto record = [&](int64_t step, bool scored) {
    StepRecord rec{step, 1.5, 1e-3, 0.5, 10, -1};
    if (scored) {
      rec.hellaswag_examples = r.examples;
      rec.hellaswag_correct = r.correct;
      rec.hellaswag_correct_norm = r.correct_norm;
    }
    return rec;
  };
  {
    RunOutputs out(dir, true);
    out.open_metrics(0);
    for (int64_t step = 1; step <= 15; step++)
      out.step(record(step, step % 5 == 0), 20, 1, 1, 1, 0);
  }
  {
    RunOutputs resumed(dir, true);
    resumed.open_metrics(10);
    resumed.step(record(11, false), 20, 1, 1, 1, 0);
  }
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<std::string> scored;
  int lines = 0;
  for (std::string line; std::getline(in, line); lines++)
    if (line.find("\"hellaswag\":") != std::string::npos) scored.push_back(line);
  CHECK(lines == 11);
  REQUIRE(scored.size() == 2);
  CHECK(scored[0].find("{\"step\":5,") == 0);
  CHECK(scored[1].find("{\"step\":10,") == 0);
  CHECK(scored[1].find("\"hellaswag\":{\"acc\":0.29396") != std::string::npos);
  CHECK(scored[1].find("\"correct\":2952,\"correct_norm\":2967,\"examples\":10042}") !=
        std::string::npos);
}

}  // namespace zt
