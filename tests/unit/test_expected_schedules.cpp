// The schedule rules of stages 0-3 against numbers worked out by hand from
// DeepSpeed 0.14.4's source (runtime/zero/stage_1_and_2.py, stage3.py,
// partition_parameters.py, partitioned_param_coordinator.py,
// parameter_offload.py, runtime/utils.py, runtime/engine.py), never from
// zerotrain's own helpers: `plan` shares its code with the engines, so only
// literals computed outside it can catch a rule that is wrong in both. Every
// case sits on both sides of its boundary (exactly at a size and one over or
// under), on a one-block GPT small enough to do the sums on paper.
//
// The model (n_layer 1, n_head 1, n_embd C = 3, vocab V = 5, seq_len T = 2) has
// 16 tensors, in registration order (index: name numel):
//   0 wte 15 (V*C)      1 wpe 6 (T*C)      2 ln_1.w 3        3 ln_1.b 3
//   4 c_attn.w 27 (3C*C) 5 c_attn.b 9 (3C)  6 attn.c_proj.w 9 7 attn.c_proj.b 3
//   8 ln_2.w 3          9 ln_2.b 3         10 c_fc.w 36 (4C*C) 11 c_fc.b 12 (4C)
//   12 mlp.c_proj.w 36  13 mlp.c_proj.b 3  14 ln_f.w 3       15 ln_f.b 3
// 174 elements; with param_groups "two" the decay group is {0,1,4,6,10,12}
// (15+6+27+9+36+36 = 129) and the no-decay group the other ten (45).
#include <cstdint>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/layout/flat_layout.h"
#include "zero/layout/param_groups.h"
#include "zero/layout/stage3_layout.h"
#include "zero/schedule/deepspeed_behaviours.h"
#include "zero/schedule/grad_path.h"
#include "zero/schedule/stage012_schedule.h"

namespace zt {
namespace {

std::vector<int> model_order() {
  std::vector<int> o;
  for (int p = 0; p < 16; p++) o.push_back(p);
  return o;
}

// A bucket as "params : calls", e.g. "0 1 : AR21" or "10 : R7@0 R29@1"
// (AR all-reduce, RS reduce-scatter with the count each rank receives, R rooted
// reduce @ root).
std::string show(const GradBucket& b) {
  std::string s = b.params.empty() ? "- " : "";  // "-": a bucket holding no tensor
  for (int p : b.params) s += std::to_string(p) + " ";
  s += ":";
  for (const BucketCall& c : b.calls) {
    s += " ";
    switch (c.primitive) {
      case Primitive::AllReduce: s += "AR" + std::to_string(c.count); break;
      case Primitive::ReduceScatter: s += "RS" + std::to_string(c.count); break;
      case Primitive::Reduce:
        s += "R" + std::to_string(c.count) + "@" + std::to_string(c.root);
        break;
      default: s += "?"; break;
    }
  }
  return s;
}

std::vector<std::string> show(const BucketSchedule& s) {
  std::vector<std::string> out;
  for (const GradBucket& b : s.buckets) out.push_back(show(b));
  return out;
}

// For each bucket, the arrival index it is reduced before (16: after the last).
std::vector<int> closes(const BucketSchedule& s) {
  std::vector<int> at(s.buckets.size(), -1);
  for (size_t i = 0; i < s.reduce_at.size(); i++)
    for (int b : s.reduce_at[i]) at[b] = static_cast<int>(i);
  return at;
}

// Stage 1 without overlap walks the groups in order: with one group, tensors
// 0..15, so the bucket rule alone decides the buckets.
Stage012Schedule stage1(const ParamTable& t, int64_t bucket, bool reduce_scatter,
                        bool multi_rank = true, bool contiguous = true, int W = 2,
                        const DeepSpeedRelease& release = default_deepspeed_release()) {
  ZeroConfig z;
  z.deepspeed_version = release;
  z.stage = 1;
  z.reduce_bucket_size = bucket;
  z.reduce_scatter = reduce_scatter;
  z.use_multi_rank_bucket_allreduce = multi_rank;
  z.contiguous_gradients = contiguous;
  return make_stage012_schedule(setup_for(z, t, "one"), t, W, DType::F32);
}

const GradBucket* bucket_of(const BucketSchedule& s, const std::vector<int>& params) {
  for (const GradBucket& b : s.buckets)
    if (b.params == params) return &b;
  return nullptr;
}

}  // namespace

TEST_CASE("the hand-worked model has the tensor sizes the tables below assume", "[expected]") {
  const ParamTable t(hand_sized_shape());
  // V*C, T*C, C, C, 3C*C, 3C, C*C, C, C, C, 4C*C, 4C, 4C*C, C, C, C with C 3, V 5, T 2.
  const std::vector<size_t> want = {15, 6, 3, 3, 27, 9, 9, 3, 3, 3, 36, 12, 36, 3, 3, 3};
  std::vector<size_t> got;
  for (const ParamInfo& p : t.params()) got.push_back(p.numel);
  CHECK(got == want);
  CHECK(t.total() == 174);
}

// stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads: before a
// tensor joins, the bucket is reduced when elements + numel > reduce_bucket_size
// (strictly greater, checked before adding, with no test that the bucket holds
// anything). reduce_scatter false takes gradient_reduction_w_predivide: one
// all-reduce of the whole bucket.
TEST_CASE("stage 1/2: a bucket closes before the tensor that would take it past the size",
          "[expected]") {
  const ParamTable t(hand_sized_shape());
  SECTION("reduce_bucket_size 21: 15 + 6 = 21 is not > 21, so wte and wpe share a bucket") {
    const Stage012Schedule s = stage1(t, 21, false);
    // Running sums: 15, 21 | 3+3 = 6 (6+27 > 21) | 27 alone | 9+9+3 = 21 (21+3 > 21) | 3+3 = 6
    // (6+36 > 21) | 36 | 12 (12+36 > 21) | 36 | 3+3+3 = 9 at the end.
    const std::vector<std::string> want = {"0 1 : AR21",   "2 3 : AR6", "4 : AR27",
                                           "5 6 7 : AR21", "8 9 : AR6", "10 : AR36",
                                           "11 : AR12",    "12 : AR36", "13 14 15 : AR9"};
    CHECK(show(s.grads) == want);
    // Each closes as the tensor after its last arrives: 2 (ln_1.w), 4 (c_attn.w), ... 16 (end).
    CHECK(closes(s.grads) == std::vector<int>{2, 4, 5, 8, 10, 11, 12, 13, 16});
  }
  SECTION("reduce_bucket_size 20: 15 + 6 = 21 > 20, so wte goes alone") {
    const Stage012Schedule s = stage1(t, 20, false);
    // 15 | 6+3+3 = 12 (12+27 > 20) | 27 | 9+9 = 18 (18+3 > 20) | 3+3+3 = 9 (9+36 > 20) | 36 |
    // 12 | 36 | 9.
    const std::vector<std::string> want = {"0 : AR15",   "1 2 3 : AR12", "4 : AR27",
                                           "5 6 : AR18", "7 8 9 : AR9",  "10 : AR36",
                                           "11 : AR12",  "12 : AR36",    "13 14 15 : AR9"};
    CHECK(show(s.grads) == want);
    CHECK(closes(s.grads) == std::vector<int>{1, 4, 5, 7, 10, 11, 12, 13, 16});
  }
}

// The same rule with a first tensor larger than the bucket: 0 + 15 > 14 reduces
// the still empty bucket (reduce_ipg_grads -> average_tensor on a 0-element
// narrow of the ipg buffer). With reduce_scatter false that is a 0-element
// all-reduce up to DeepSpeed 0.14.4 (from 0.14.5 gradient_reduction_w_predivide
// returns on an empty tensor: no call); the default path (allreduce_and_scatter) and the per-owner
// path (allreduce_no_retain) find no slices and issue nothing; contiguous_gradients false
// (buffered_reduce_fallback over no gradients) issues nothing either. An oversized tensor is never
// cut: it sits alone in its bucket.
TEST_CASE("stage 1/2: a tensor larger than the bucket goes alone, after an empty bucket if first",
          "[expected]") {
  const ParamTable t(hand_sized_shape());
  // 15 > 14: empty, then 15 alone | 6+3+3 = 12 (12+27 > 14) | 27 | 9 (9+9 > 14) | 9+3 = 12
  // (12+3 > 14) | 3+3 = 6 (6+36 > 14) | 36 | 12 | 36 | 9.
  std::vector<std::string> plain = {"- : AR0",   "0 : AR15",   "1 2 3 : AR12",  "4 : AR27",
                                    "5 : AR9",   "6 7 : AR12", "8 9 : AR6",     "10 : AR36",
                                    "11 : AR12", "12 : AR36",  "13 14 15 : AR9"};
  const Stage012Schedule s = stage1(t, 14, false, true, true, 2, DeepSpeedRelease{0, 14, 4});
  CHECK(show(s.grads) == plain);
  CHECK(closes(s.grads) == std::vector<int>{0, 1, 4, 5, 6, 8, 10, 11, 12, 13, 16});
  plain[0] = "- :";
  for (const DeepSpeedRelease r : {DeepSpeedRelease{0, 14, 5}, default_deepspeed_release()}) {
    const Stage012Schedule skipped = stage1(t, 14, false, true, true, 2, r);
    CHECK(show(skipped.grads) == plain);
    CHECK(closes(skipped.grads) == closes(s.grads));
  }
  for (bool multi_rank : {true, false}) {
    const Stage012Schedule d = stage1(t, 14, true, multi_rank);
    REQUIRE(d.grads.buckets.size() == 11);
    CHECK(show(d.grads.buckets[0]) == "- :");  // the empty bucket: no call
    CHECK(closes(d.grads)[0] == 0);
  }
  const Stage012Schedule f = stage1(t, 14, true, true, false);
  REQUIRE(f.grads.buckets.size() == 11);
  CHECK(show(f.grads.buckets[0]) == "- :");
}

// average_tensor: a bucket's owner slices (consecutive slices of one owner
// merged) go to allreduce_and_scatter (default) or, per owner,
// allreduce_no_retain; both append a slice first and issue a call once the
// running sum is > reduce_bucket_size. Group "one" at W = 2: 174 padded to 176
// (a multiple of 2W = 4), rank 0 owns [0, 88), rank 1 [88, 176); c_fc.w sits at
// [81, 117): 88 - 81 = 7 elements of rank 0, 117 - 88 = 29 of rank 1.
TEST_CASE("stage 1/2: the default and per-owner paths split an oversized bucket by owner runs",
          "[expected]") {
  const ParamTable t(hand_sized_shape());
  SECTION("reduce_bucket_size 21, default path: 7 + 29 = 36 > 21 only after the second slice") {
    const Stage012Schedule s = stage1(t, 21, true, true);
    // Same buckets as the plain path at 21; every bucket but c_fc.w's has one owner.
    const std::vector<std::string> want = {"0 1 : AR21",   "2 3 : AR6", "4 : AR27",
                                           "5 6 7 : AR21", "8 9 : AR6", "10 : AR36",
                                           "11 : AR12",    "12 : AR36", "13 14 15 : AR9"};
    CHECK(show(s.grads) == want);
  }
  SECTION("reduce_bucket_size 21, per-owner path: one rooted reduce per owner") {
    const Stage012Schedule s = stage1(t, 21, true, false);
    // Tensors 0..9 lie below 88 (rank 0), 11..15 above (rank 1); c_fc.w is 7 @0 then 29 @1.
    const std::vector<std::string> want = {"0 1 : R21@0",   "2 3 : R6@0", "4 : R27@0",
                                           "5 6 7 : R21@0", "8 9 : R6@0", "10 : R7@0 R29@1",
                                           "11 : R12@1",    "12 : R36@1", "13 14 15 : R9@1"};
    CHECK(show(s.grads) == want);
  }
  SECTION("reduce_bucket_size 6 vs 7: rank 0's 7 elements close a call only when 7 > size") {
    const Stage012Schedule six = stage1(t, 6, true, true);
    const GradBucket* b6 = bucket_of(six.grads, {10});
    REQUIRE(b6 != nullptr);
    CHECK(show(*b6) == "10 : AR7 AR29");  // 7 > 6: a call after rank 0's slice
    const Stage012Schedule seven = stage1(t, 7, true, true);
    const GradBucket* b7 = bucket_of(seven.grads, {10});
    REQUIRE(b7 != nullptr);
    CHECK(show(*b7) == "10 : AR36");  // 7 > 7 is false: both slices in one call
    const Stage012Schedule owner = stage1(t, 6, true, false);
    const GradBucket* bo = bucket_of(owner.grads, {10});
    REQUIRE(bo != nullptr);
    CHECK(show(*bo) == "10 : R7@0 R29@1");
  }
}

// engine.py allreduce_gradients -> buffered_allreduce_fallback with
// MEMORY_OPT_ALLREDUCE_SIZE (5e8): stage 0 ignores reduce_bucket_size, so
// 174 elements are one all-reduce however small the configured bucket.
TEST_CASE("stage 0: one all-reduce bucket of 5e8 elements whatever reduce_bucket_size says",
          "[expected]") {
  const ParamTable t(hand_sized_shape());
  ZeroConfig z;
  z.stage = 0;
  z.reduce_bucket_size = 14;
  const Stage012Schedule s = make_stage012_schedule(setup_for(z, t, "two"), t, 2, DType::F32);
  REQUIRE(s.grads.buckets.size() == 1);
  CHECK(s.grads.buckets[0].calls.size() == 1);
  CHECK(s.grads.buckets[0].calls[0].primitive == Primitive::AllReduce);
  CHECK(s.grads.buckets[0].calls[0].count == 174);
}

// stage3.py reduce_independent_p_g_buckets_and_remove_grads: the bucket is
// reduced when elements + ds_numel > reduce_bucket_size AND elements > 0 (no
// empty bucket). __reduce_and_partition_ipg_grads all-reduces only with
// contiguous_gradients, reduce_scatter false and elements <= reduce_bucket_size;
// otherwise reduce_scatter_coalesced, where each rank receives ceil(n / W) of
// every tensor: at W = 2 the pieces are 8 3 2 2 14 5 5 2 2 2 18 6 18 2 2 2.
TEST_CASE("stage 3: buckets close only when non-empty; all-reduce only for buckets that fit",
          "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  ZeroConfig z;
  z.stage = 3;
  auto buckets = [&](int64_t size) {
    z.reduce_bucket_size = size;
    const Stage3Layout layout(t, groups, 2, z);
    return layout.grad_buckets(t, model_order(), z, 1);
  };
  SECTION("reduce_scatter true") {
    z.reduce_scatter = true;
    // 21: sums as stage 1 at 21; RS counts 8+3, 2+2, 14, 5+5+2, 2+2, 18, 6, 18, 2+2+2.
    BucketSchedule s = buckets(21);
    CHECK(show(s) == std::vector<std::string>{"0 1 : RS11", "2 3 : RS4", "4 : RS14", "5 6 7 : RS12",
                                              "8 9 : RS4", "10 : RS18", "11 : RS6", "12 : RS18",
                                              "13 14 15 : RS6"});
    CHECK(closes(s) == std::vector<int>{2, 4, 5, 8, 10, 11, 12, 13, 16});
    // 20: 15 + 6 > 20 splits wte off; 9 + 9 = 18, 18 + 3 > 20; RS 8, 3+2+2, 14, 5+5, 2+2+2, ...
    s = buckets(20);
    CHECK(show(s) == std::vector<std::string>{"0 : RS8", "1 2 3 : RS7", "4 : RS14", "5 6 : RS10",
                                              "7 8 9 : RS6", "10 : RS18", "11 : RS6", "12 : RS18",
                                              "13 14 15 : RS6"});
    CHECK(closes(s) == std::vector<int>{1, 4, 5, 7, 10, 11, 12, 13, 16});
    // 14: wte (15 > 14) joins the empty bucket without reducing it, unlike stages 1/2.
    s = buckets(14);
    CHECK(show(s) == std::vector<std::string>{"0 : RS8", "1 2 3 : RS7", "4 : RS14", "5 : RS5",
                                              "6 7 : RS7", "8 9 : RS4", "10 : RS18", "11 : RS6",
                                              "12 : RS18", "13 14 15 : RS6"});
    CHECK(closes(s) == std::vector<int>{1, 4, 5, 6, 8, 10, 11, 12, 13, 16});
  }
  SECTION("reduce_scatter false: 21 <= 21 all-reduces, an oversized 27 or 36 reduce-scatters") {
    z.reduce_scatter = false;
    const BucketSchedule s = buckets(21);
    CHECK(show(s) == std::vector<std::string>{"0 1 : AR21", "2 3 : AR6", "4 : RS14", "5 6 7 : AR21",
                                              "8 9 : AR6", "10 : RS18", "11 : AR12", "12 : RS18",
                                              "13 14 15 : AR9"});
  }
}

// stage_1_and_2.py __init__: each group is flattened with
// flatten_dense_tensors_aligned(..., nccl_start_alignment_factor * W), the
// factor being 2 (align_dense_tensors pads to a multiple of 2W), and
// get_data_parallel_partitions cuts it into W equal parts.
TEST_CASE("stage 1/2: each parameter group is padded to a multiple of 2W", "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  struct Row {
    int W;
    size_t decay, no_decay;  // padded group sizes
  };
  // 129 and 45 rounded up to multiples of 4 (W 2), 6 (W 3), 8 (W 4):
  // 132 = 33*4, 48 = 12*4; 132 = 22*6, 48 = 8*6; 136 = 17*8, 48 = 6*8.
  const std::vector<Row> rows = {{2, 132, 48}, {3, 132, 48}, {4, 136, 48}};
  for (const Row& r : rows) {
    INFO("W = " << r.W);
    const FlatLayout l = FlatLayout::deepspeed(t, groups, r.W, false);
    REQUIRE(l.group_ranges().size() == 2);
    CHECK(l.group_ranges()[0].begin == 0);
    CHECK(l.group_ranges()[0].size() == r.decay);
    CHECK(l.group_ranges()[1].begin == r.decay);
    CHECK(l.group_ranges()[1].size() == r.no_decay);
    CHECK(l.padded_total() == r.decay + r.no_decay);
    REQUIRE(l.partition().groups().size() == 2);
    CHECK(l.partition().slice(0, r.W - 1).size() == r.decay / r.W);
    CHECK(l.partition().slice(1, 0).begin == r.decay);
    CHECK(l.partition().slice(1, 0).size() == r.no_decay / r.W);
  }
}

// partition_parameters.py _partition_param: each tensor is padded to a
// multiple of W (_padding_size) and every rank holds ceil(numel / W) of it.
TEST_CASE("stage 3: each tensor is split into W pieces of ceil(numel / W)", "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  struct Row {
    int W;
    std::vector<size_t> pieces;  // per tensor
    size_t shard;                // their sum
  };
  // ceil(15/2)=8, ceil(6/2)=3, ceil(3/2)=2, ceil(27/2)=14, ceil(9/2)=5, ceil(36/2)=18, ceil(12/2)=6
  // (sum 93); at W 3: 5 2 1 9 3 12 4 (sum 58); at W 4: 4 2 1 7 3 9 3 (sum 48).
  const std::vector<Row> rows = {
      {2, {8, 3, 2, 2, 14, 5, 5, 2, 2, 2, 18, 6, 18, 2, 2, 2}, 93},
      {3, {5, 2, 1, 1, 9, 3, 3, 1, 1, 1, 12, 4, 12, 1, 1, 1}, 58},
      {4, {4, 2, 1, 1, 7, 3, 3, 1, 1, 1, 9, 3, 9, 1, 1, 1}, 48},
  };
  ZeroConfig z;
  z.stage = 3;
  for (const Row& r : rows) {
    INFO("W = " << r.W);
    const Stage3Layout l(t, groups, r.W, z);
    std::vector<size_t> got;
    for (int p = 0; p < 16; p++) got.push_back(l.piece(p));
    CHECK(got == r.pieces);
    CHECK(l.shard_size() == r.shard);
  }
  // The shard holds the decay group first (0, 1, 4, 6, 10, 12), then the rest: at W 2 the
  // offsets run 0, 8, 8+3 = 11, 11+14 = 25, 25+5 = 30, 30+18 = 48, then 48+18 = 66 for ln_1.w.
  const Stage3Layout l(t, groups, 2, z);
  CHECK(l.shard_offset(0) == 0);
  CHECK(l.shard_offset(1) == 8);
  CHECK(l.shard_offset(4) == 11);
  CHECK(l.shard_offset(6) == 25);
  CHECK(l.shard_offset(10) == 30);
  CHECK(l.shard_offset(12) == 48);
  CHECK(l.shard_offset(2) == 66);
}

// parameter_offload.py mark_persistent_parameters: walking named_parameters,
// a tensor is skipped (continue, not stop) when ds_numel + the persistent total
// so far > model_persistence_threshold; else it persists when ds_numel <=
// param_persistence_threshold.
TEST_CASE("stage 3: a tensor persists when numel <= the threshold", "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  auto persistent = [&](int64_t param_threshold, int64_t model_threshold) {
    ZeroConfig z;
    z.stage = 3;
    z.stage3_param_persistence_threshold = param_threshold;
    z.stage3_model_persistence_threshold = model_threshold;
    return Stage3Layout(t, groups, 2, z).persistent_params();
  };
  // c_attn.w has 27 elements: out at 26, in at 27 (27 <= 27) and 28. Every tensor but the
  // 27 and the two 36s is at most 15.
  const std::vector<int> small = {0, 1, 2, 3, 5, 6, 7, 8, 9, 11, 13, 14, 15};
  const std::vector<int> with_27 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 14, 15};
  CHECK(persistent(26, INT64_MAX) == small);
  CHECK(persistent(27, INT64_MAX) == with_27);
  CHECK(persistent(28, INT64_MAX) == with_27);
  // Model thresholds, every tensor under the param threshold: 21: wte 15 <= 21, wpe 15 + 6 = 21 <=
  // 21, then 21 + 3 > 21 for everything else.
  CHECK(persistent(100000, 21) == std::vector<int>{0, 1});
  // 20: wte 15; wpe 21 > 20 skipped; ln_1.w 18 <= 20; nothing else fits (18 + 3 > 20).
  CHECK(persistent(100000, 20) == std::vector<int>{0, 2});
  // 24: wte 15, wpe 21, ln_1.w 24, then 27 > 24 for the rest.
  CHECK(persistent(100000, 24) == std::vector<int>{0, 1, 2});
}

// stage_1_and_2.py _round_robin_reorder: tensor i of a group goes to run
// i % W, runs in order 0..W-1, each in the group's order; the flat buffer (and
// so each rank's ownership) follows that order, while stage 1's boundary
// reduction still walks the groups in their original order (bit16_groups).
TEST_CASE("round_robin_gradients: each group reordered by i % W", "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  struct Row {
    int W;
    std::vector<int> decay, no_decay;
  };
  // decay {0,1,4,6,10,12}: i%2 runs {0,4,10} {1,6,12}; i%3 {0,6} {1,10} {4,12};
  // i%4 {0,10} {1,12} {4} {6}. no-decay {2,3,5,7,8,9,11,13,14,15}: i%2 {2,5,8,11,14}
  // {3,7,9,13,15}; i%3 {2,7,11,15} {3,8,13} {5,9,14}; i%4 {2,8,14} {3,9,15} {5,11} {7,13}.
  const std::vector<Row> rows = {
      {2, {0, 4, 10, 1, 6, 12}, {2, 5, 8, 11, 14, 3, 7, 9, 13, 15}},
      {3, {0, 6, 1, 10, 4, 12}, {2, 7, 11, 15, 3, 8, 13, 5, 9, 14}},
      {4, {0, 10, 1, 12, 4, 6}, {2, 8, 14, 3, 9, 15, 5, 11, 7, 13}},
  };
  for (const Row& r : rows) {
    INFO("W = " << r.W);
    const FlatLayout rr = FlatLayout::deepspeed(t, groups, r.W, true);
    REQUIRE(rr.groups().size() == 2);
    CHECK(rr.groups()[0].params == r.decay);
    CHECK(rr.groups()[1].params == r.no_decay);
    const FlatLayout plain = FlatLayout::deepspeed(t, groups, r.W, false);
    CHECK(plain.groups()[0].params == std::vector<int>{0, 1, 4, 6, 10, 12});
  }
  // W 2: decay offsets 0, 15, 15+27 = 42, 42+36 = 78, 78+6 = 84, 84+9 = 93 (129, padded 132,
  // 66 per rank); c_fc.w [42, 78) is 66-42 = 24 of rank 0 and 12 of rank 1. No-decay from 132:
  // 2@132 5@135 8@144 11@147 ..., 180 in all; c_fc.b [147, 159) is 9 of rank 0, 3 of rank 1.
  const FlatLayout rr = FlatLayout::deepspeed(t, groups, 2, true);
  const std::vector<std::pair<int, size_t>> offsets = {
      {0, 0},   {4, 15},   {10, 42},  {1, 78},  {6, 84},  {12, 93}, {2, 132},  {5, 135},
      {8, 144}, {11, 147}, {14, 159}, {3, 162}, {7, 165}, {9, 168}, {13, 171}, {15, 174}};
  for (const auto& [p, off] : offsets) {
    INFO("tensor " << p);
    CHECK(rr.offset(p) == off);
  }
  CHECK(rr.padded_total() == 180);
  auto owners = [&](const FlatLayout& l, int p) {
    std::vector<std::pair<int, size_t>> out;
    for (const BucketSlice& s : owner_pieces(t, l, p))
      for (int k = 0; k < s.ranks; k++) out.push_back({s.owner + k, s.n});
    return out;
  };
  CHECK(owners(rr, 10) == std::vector<std::pair<int, size_t>>{{0, 24}, {1, 12}});
  CHECK(owners(rr, 11) == std::vector<std::pair<int, size_t>>{{0, 9}, {1, 3}});
  CHECK(owners(rr, 1) == std::vector<std::pair<int, size_t>>{{1, 6}});
  // Without round robin: c_fc.w at 15+6+27+9 = 57, [57, 93): 9 of rank 0, 27 of rank 1;
  // c_fc.b at 132+3+3+9+3+3+3 = 156, [156, 168): all rank 1's; wpe [15, 21): rank 0's.
  const FlatLayout plain = FlatLayout::deepspeed(t, groups, 2, false);
  CHECK(owners(plain, 10) == std::vector<std::pair<int, size_t>>{{0, 9}, {1, 27}});
  CHECK(owners(plain, 11) == std::vector<std::pair<int, size_t>>{{1, 12}});
  CHECK(owners(plain, 1) == std::vector<std::pair<int, size_t>>{{0, 6}});
  // Stage 1 still reduces in the original group order: wte, wpe, c_attn.w, ...
  ZeroConfig z;
  z.stage = 1;
  z.round_robin_gradients = true;
  const Stage012Schedule s = make_stage012_schedule(setup_for(z, t, "two"), t, 2, DType::F32);
  CHECK(s.grads.order == std::vector<int>{0, 1, 4, 6, 10, 12, 2, 3, 5, 7, 8, 9, 11, 13, 14, 15});
}

// runtime/utils.py all_gather_dp_groups (the path without
// all_gather_into_tensor, zerotrain's allgather_bucketed): num_shards =
// max(1, partition * W // allgather_bucket_size); shard = partition //
// num_shards, less shard % 2 (start_alignment_factor); the last shard takes the
// rest. DeepSpeed asserts allgather_bucket_size is even.
TEST_CASE("legacy all-gather: max(1, P*W // bucket) calls, shards trimmed to even", "[expected]") {
  struct Row {
    size_t partition;
    int W;
    int64_t bucket;
    std::vector<size_t> chunks;
  };
  const std::vector<Row> rows = {
      {66, 2, 132, {66}},             // 132 // 132 = 1
      {66, 2, 130, {66}},             // 132 // 130 = 1
      {66, 2, 68, {66}},              // 132 // 68 = 1
      {66, 2, 66, {32, 34}},          // 132 // 66 = 2; 66 // 2 = 33, odd -> 32; 66 - 32 = 34
      {66, 2, 44, {22, 22, 22}},      // 3 shards of 66 // 3 = 22
      {66, 2, 32, {16, 16, 16, 18}},  // 132 // 32 = 4; 66 // 4 = 16; 66 - 48 = 18
      {24, 2, 66, {24}},              // 48 // 66 = 0 -> max(1, 0) = 1
      {44, 3, 40, {14, 14, 16}},      // 132 // 40 = 3; 44 // 3 = 14; 44 - 28 = 16
      {44, 3, 44, {14, 14, 16}},      // 132 // 44 = 3
      {44, 3, 46, {22, 22}},          // 132 // 46 = 2; 44 // 2 = 22
  };
  for (const Row& r : rows) {
    INFO("partition " << r.partition << " W " << r.W << " bucket " << r.bucket);
    CHECK(legacy_allgather_chunks(r.partition, r.W, r.bucket) == r.chunks);
  }
  // Through the stage-1 step at W 2, groups "two": slices 132/2 = 66 and 48/2 = 24; after the
  // two norm all-reduces, bucket 66 gathers 32 at 0, 34 at 32 of group 0, then 24 of group 1.
  const ParamTable t(hand_sized_shape());
  ZeroConfig z;
  z.stage = 1;
  z.allgather_bucketed = true;
  z.allgather_bucket_size = 66;
  const Stage012Schedule s = make_stage012_schedule(setup_for(z, t, "two"), t, 2, DType::F32);
  struct Call {
    StepCall::Kind kind;
    size_t count, offset;
    int group;
  };
  const std::vector<Call> want = {{StepCall::Norm, 1, 0, 0},
                                  {StepCall::Norm, 1, 0, 1},
                                  {StepCall::ParamGather, 32, 0, 0},
                                  {StepCall::ParamGather, 34, 32, 0},
                                  {StepCall::ParamGather, 24, 0, 1}};
  REQUIRE(s.step.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO("step call " << i);
    CHECK(s.step[i].kind == want[i].kind);
    CHECK(s.step[i].count == want[i].count);
    CHECK(s.step[i].offset == want[i].offset);
    CHECK(s.step[i].group == want[i].group);
  }
  // Bucket 68 (132 // 68 = 1) and the default all_gather_into_tensor path: one call per group.
  for (bool bucketed : {true, false}) {
    z.allgather_bucketed = bucketed;
    z.allgather_bucket_size = 68;
    const Stage012Schedule one = make_stage012_schedule(setup_for(z, t, "two"), t, 2, DType::F32);
    REQUIRE(one.step.size() == 4);
    CHECK(one.step[2].count == 66);
    CHECK(one.step[3].count == 24);
  }
}

}  // namespace zt
