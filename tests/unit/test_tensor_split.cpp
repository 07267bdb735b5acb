// The tensor-parallel split of the parameter table (model/param_table.h) and
// the weights' way between the whole layout and a shard's
// (model/tensor_split.h), against shapes and element positions worked out by
// hand for a small GPT-2.
#include <numeric>
#include <stdexcept>
#include <vector>

#include "model/gpt.h"
#include "model/param_table.h"
#include "model/tensor_split.h"
#include "tests/support/catch.h"

namespace zt {
namespace {

GPTConfig small_model() {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 8;  // head size 2
  c.vocab_size = 12;
  c.seq_len = 5;
  return c;
}

}  // namespace

TEST_CASE("a shard of two keeps half of every cut tensor", "[tensor_split]") {
  const ParamTable shard(small_model(), TensorSplit{2, 1});
  auto shape = [&](const char* name) { return shard.find(name)->shape; };
  CHECK(shape("wte.weight") == std::vector<int>{6, 8});
  CHECK(shape("wpe.weight") == std::vector<int>{5, 8});
  CHECK(shape("h.0.attn.c_attn.weight") == std::vector<int>{12, 8});  // 3 x (8 / 2) rows
  CHECK(shape("h.0.attn.c_attn.bias") == std::vector<int>{12});
  CHECK(shape("h.0.attn.c_proj.weight") == std::vector<int>{8, 4});
  CHECK(shape("h.0.attn.c_proj.bias") == std::vector<int>{8});
  CHECK(shape("h.1.mlp.c_fc.weight") == std::vector<int>{16, 8});  // 4 x 8 / 2
  CHECK(shape("h.1.mlp.c_fc.bias") == std::vector<int>{16});
  CHECK(shape("h.1.mlp.c_proj.weight") == std::vector<int>{8, 16});
  CHECK(shape("h.1.ln_2.weight") == std::vector<int>{8});
  // Per block: ln 2x(8+8) + qkv 12*8+12 + proj 8*4+8 + fc 16*8+16 + proj 8*16+8 = 460;
  // embeddings 6*8 + 5*8 = 88; ln_f 16.
  CHECK(shard.total() == 88 + 2 * 460 + 16);
  CHECK(shard.heads() == 2);
  CHECK(shard.vocab_begin() == 6);
  CHECK(shard.find("h.0.attn.c_attn.weight")->cut == ShardCut::QkvRows);
  CHECK(shard.find("h.0.attn.c_proj.bias")->cut == ShardCut::Whole);
  // The whole model cuts nothing.
  CHECK(ParamTable(small_model()).find("wte.weight")->cut == ShardCut::Whole);
}

TEST_CASE("a split that does not divide the heads or the vocabulary is refused", "[tensor_split]") {
  CHECK_THROWS_WITH(ParamTable(small_model(), TensorSplit{3, 0}),
                    Catch::Contains("model.n_head 4 is not a multiple"));
  GPTConfig c = small_model();
  c.vocab_size = 10;
  CHECK_THROWS_WITH(ParamTable(c, TensorSplit{4, 0}), Catch::Contains("model.vocab_size 10"));
  CHECK_THROWS_AS(ParamTable(small_model(), TensorSplit{2, 2}), std::invalid_argument);
}

TEST_CASE("take_shard picks each cut's elements, put_shard puts them back", "[tensor_split]") {
  const ParamTable whole(small_model());
  std::vector<float> w(whole.total());
  std::iota(w.begin(), w.end(), 0.0f);  // each element's value is its flat offset
  const ParamTable s1(small_model(), TensorSplit{2, 1});
  const std::vector<float> part = take_shard(whole, s1, w.data());
  REQUIRE(part.size() == s1.total());
  auto at = [&](const ParamTable& t, const std::vector<float>& x, const char* name, size_t i) {
    return x[t.find(name)->offset + i];
  };
  auto whole_offset = [&](const char* name) {
    return static_cast<float>(whole.find(name)->offset);
  };
  // wte rows 6..11: shard element 0 is whole element 6 * 8.
  CHECK(at(s1, part, "wte.weight", 0) == whole_offset("wte.weight") + 48);
  // QKV rows: shard rows 0..3 are q's rows 4..7, rows 4..7 are k's (whole rows 12..15).
  CHECK(at(s1, part, "h.0.attn.c_attn.weight", 0) ==
        whole_offset("h.0.attn.c_attn.weight") + 4 * 8);
  CHECK(at(s1, part, "h.0.attn.c_attn.weight", 4 * 8) ==
        whole_offset("h.0.attn.c_attn.weight") + 12 * 8);
  CHECK(at(s1, part, "h.0.attn.c_attn.bias", 8) == whole_offset("h.0.attn.c_attn.bias") + 20);
  // Columns: shard row 1, column 0 is whole row 1, column 4.
  CHECK(at(s1, part, "h.0.attn.c_proj.weight", 4) == whole_offset("h.0.attn.c_proj.weight") + 12);
  CHECK(at(s1, part, "h.1.mlp.c_proj.weight", 16 + 3) ==
        whole_offset("h.1.mlp.c_proj.weight") + 32 + 16 + 3);
  CHECK(at(s1, part, "h.0.attn.c_proj.bias", 5) == whole_offset("h.0.attn.c_proj.bias") + 5);

  for (int degree : {2, 4}) {
    std::vector<float> back(whole.total(), -1.0f);
    for (int i = 0; i < degree; i++) {
      const ParamTable s(small_model(), TensorSplit{degree, i});
      put_shard(whole, s, take_shard(whole, s, w.data()).data(), back.data());
    }
    CHECK(back == w);
  }
}

TEST_CASE("sequence parallelism needs a micro-batch that splits evenly", "[tensor_split]") {
  GPTConfig c = small_model();
  c.seq_len = 5;
  const ParamTable shard(c, TensorSplit{2, 0, true});
  auto ops = make_cpu_ops();
  CHECK_THROWS_WITH(
      GPT(shard, *ops, 1, 5),
      "sequence parallelism: a micro-batch's 5 tokens do not split into 2 equal parts");
  CHECK_NOTHROW(GPT(shard, *ops, 2, 5));
}

}  // namespace zt
