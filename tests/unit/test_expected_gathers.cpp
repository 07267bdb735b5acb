// Stage 3's parameter coordinator (zero/param_gatherer) against numbers worked
// out by hand from DeepSpeed 0.14.4's partitioned_param_coordinator.py and
// stage3.py (and 0.19.3's backward_epilogue, which releases what no backward
// hook released), never from zerotrain's helpers: which tensors each fetch
// gathers under the prefetch, live-parameter and reuse budgets, which a
// release frees, how the optimizer's sub-groups close, and how far NVMe reads
// run ahead. The model is test_expected_schedules.cpp's (n_layer 1, n_head 1,
// n_embd 3, vocab 5, seq_len 2): 16 tensors of 15, 6, 3, 3, 27, 9, 9, 3, 3, 3,
// 36, 12, 36, 3, 3, 3 elements.
#include <cstdint>
#include <vector>

#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "zero/deepspeed_release.h"
#include "zero/layout/param_groups.h"
#include "zero/layout/stage3_layout.h"
#include "zero/schedule/param_gatherer.h"

namespace zt {
namespace {

// Records the gatherer's calls: each coalesced all-gather as its parameter list.
class Recorder : public GatherBackend {
 public:
  void gather(const std::vector<int>& params, GatherFrom) override { calls.push_back(params); }
  void read_ahead(const std::vector<int>& params) override { reads.push_back(params); }
  void wait(int) override {}
  void drop(int, bool) override {}
  void drop_secondaries() override {}
  std::vector<int64_t> broadcast_from_rank0(const std::vector<int64_t>& mine) override {
    return mine;
  }
  std::vector<std::vector<int>> calls;
  std::vector<std::vector<int>> reads;  // each NVMe read-ahead hint
};

// Two passes of fetch/release over `modules` (module indices, each fetched then
// released, forward only); returns the second pass's gathers, the first being
// the recording pass without prefetch. `reads`, when given, gets the second
// pass's read-ahead hints.
std::vector<std::vector<int>> second_pass(const ZeroConfig& z, const std::vector<int>& modules,
                                          std::vector<std::vector<int>>* reads = nullptr) {
  const ParamTable t(hand_sized_shape());
  const Stage3Layout layout(t, make_param_groups(t, "two"), 2, z);
  ParamStates st;
  st.status.assign(16, ParamStatus::NotAvailable);
  st.active.assign(16, {});
  st.call.assign(16, -1);
  st.secondary.assign(16, false);
  Recorder rec;
  ParamGatherer g(t, layout, z, st, rec);
  for (int pass = 0; pass < 2; pass++) {
    rec.calls.clear();
    rec.reads.clear();
    for (int m : modules) {
      g.fetch(m, false);
      g.release(m, false);
    }
    g.end_pass();
  }
  if (reads != nullptr) *reads = rec.reads;
  return rec.calls;
}

// Two training passes (forward over `forward`, then backward over it reversed,
// each module fetched then released); returns the second pass's gathers.
std::vector<std::vector<int>> second_training_pass(const ZeroConfig& z,
                                                   const std::vector<int>& forward) {
  const ParamTable t(hand_sized_shape());
  const Stage3Layout layout(t, make_param_groups(t, "two"), 2, z);
  ParamStates st;
  st.status.assign(16, ParamStatus::NotAvailable);
  st.active.assign(16, {});
  st.call.assign(16, -1);
  st.secondary.assign(16, false);
  Recorder rec;
  ParamGatherer g(t, layout, z, st, rec);
  for (int pass = 0; pass < 2; pass++) {
    rec.calls.clear();
    for (int m : forward) {
      g.fetch(m, false);
      g.release(m, false);
    }
    for (auto m = forward.rbegin(); m != forward.rend(); ++m) {
      g.fetch(*m, true);
      g.release(*m, true);
    }
    g.end_pass();
  }
  return rec.calls;
}

// Modules of the small model: 1 wte {0}, 2 wpe {1}, 4 ln_1 {2,3}, 6 c_attn {4,5},
// 7 attn.c_proj {6,7}, 8 ln_2 {8,9}, 10 c_fc {10,11}, 11 mlp.c_proj {12,13}, 13 lm_head {0}.
const std::vector<int> kBlock = {4, 6, 7, 8, 10, 11};

ZeroConfig stage3_config(int64_t prefetch, int64_t max_live, int64_t reuse = 1000000000) {
  ZeroConfig z;
  z.stage = 3;
  z.stage3_param_persistence_threshold = 0;  // nothing persistent: every tensor gathered
  z.stage3_prefetch_bucket_size = prefetch;
  z.stage3_max_live_parameters = max_live;
  z.stage3_max_reuse_distance = reuse;
  return z;
}

}  // namespace

// partitioned_param_coordinator.py fetch_sub_module: once the trace is
// complete, after fetching a module it pops the trace queue while the elements
// chosen are < min(max_live - available, prefetch_bucket_size) (so the tensor
// that reaches the budget is still taken), skipping tensors not NOT_AVAILABLE,
// and all-gathers them in one call. The trace of kBlock is 2,3 | 4,5 | 6,7 | 8,9 |
// 10,11 | 12,13 with numels 3,3 | 27,9 | 9,3 | 3,3 | 36,12 | 36,3.
TEST_CASE("stage 3: prefetch takes the trace until stage3_prefetch_bucket_size is reached",
          "[expected]") {
  struct Row {
    int64_t prefetch;
    std::vector<std::vector<int>> calls;
  };
  const std::vector<Row> rows = {
      // No prefetch: each module gathers its own pair.
      {0, {{2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}}},
      // 27: c_attn.w's 27 reaches 27 alone, so c_attn fetches c_attn.b itself, then prefetches
      // 9+3+3+3 = 18 < 27, +36 = 54; at c_proj 12 + 36 = 48; at ln_2 the last 3.
      {27, {{2, 3}, {4}, {5}, {6, 7, 8, 9, 10}, {11, 12}, {13}}},
      // 36: 27 < 36, 27 + 9 = 36 stops; then 9+3+3+3 = 18, +36 = 54; 12 + 36; 3.
      {36, {{2, 3}, {4, 5}, {6, 7, 8, 9, 10}, {11, 12}, {13}}},
      // 37: 27 + 9 = 36 < 37, + 9 = 45; then 3+3+3 = 9, +36 = 45; 12 + 36; 3.
      {37, {{2, 3}, {4, 5, 6}, {7, 8, 9, 10}, {11, 12}, {13}}},
  };
  for (const Row& r : rows) {
    INFO("stage3_prefetch_bucket_size " << r.prefetch);
    CHECK(second_pass(stage3_config(r.prefetch, 1000000000), kBlock) == r.calls);
  }
}

// The same walk with the budget max_live - available (available: elements
// gathered and not released this pass, counted from 0 at each pass's start;
// a fetch adds, a release subtracts). A prefetch never forces a release.
TEST_CASE("stage 3: stage3_max_live_parameters caps the prefetch", "[expected]") {
  struct Row {
    int64_t max_live;
    std::vector<std::vector<int>> calls;
  };
  const std::vector<Row> rows = {
      // 42: ln_1 gathers 6, budget 36 -> 4,5 (42 live); ln_1 released (36); at c_attn budget
      // 42-36 = 6 -> 6 (9, 45 live); c_attn released (9); c_proj fetches 7 (12), budget 30 ->
      // 8,9,10 (3+3+36 = 42 >= 30, 54 live); c_proj released (42); ln_2 budget 0; ln_2
      // released (36); c_fc fetches 11 (48), budget -6; c_fc released (0); c_proj fetches 12,13.
      {42, {{2, 3}, {4, 5}, {6}, {7}, {8, 9, 10}, {11}, {12, 13}}},
      // 43: budget 37 -> 4,5,6 (51 live); ln_1 released (45); c_attn budget -2; released (9);
      // c_proj fetches 7 (12), budget 31 -> 8,9,10 (54); released (42); ln_2 budget 1 -> 11
      // (54); released (48); c_fc budget -5; released (0); mlp.c_proj fetches 12,13.
      {43, {{2, 3}, {4, 5, 6}, {7}, {8, 9, 10}, {11}, {12, 13}}},
  };
  for (const Row& r : rows) {
    INFO("stage3_max_live_parameters " << r.max_live);
    CHECK(second_pass(stage3_config(50000000, r.max_live), kBlock) == r.calls);
  }
}

// __params_to_release: a module's tensors are kept when they occur in the
// modules that follow it in the trace (from the step after its fetch), walked
// while the elements passed so far are < max_reuse_distance (checked before
// each module). wte (module 1) is used again by lm_head (13) after wpe (6
// elements) and ln_1 (3 + 3): 12 elements lie between the two uses.
TEST_CASE("stage 3: a reused tensor stays gathered only within stage3_max_reuse_distance",
          "[expected]") {
  const std::vector<int> modules = {1, 2, 4, 13};
  // 12: 6 < 12 walks ln_1, then 12 >= 12 stops before lm_head: wte is released and lm_head
  // gathers it again.
  CHECK(second_pass(stage3_config(0, 1000000000, 12), modules) ==
        std::vector<std::vector<int>>{{0}, {1}, {2, 3}, {0}});
  // 13: 12 < 13 reaches lm_head, so wte stays gathered from wte to lm_head.
  CHECK(second_pass(stage3_config(0, 1000000000, 13), modules) ==
        std::vector<std::vector<int>>{{0}, {1}, {2, 3}});
  // 0: the walk stops at once (0 >= 0).
  CHECK(second_pass(stage3_config(0, 1000000000, 0), modules) ==
        std::vector<std::vector<int>>{{0}, {1}, {2, 3}, {0}});
}

// partitioned_param_coordinator.py __params_to_release: a module's tensor is
// kept when __most_recent_step_id_param_fetched_for[p] > step_id (step_id being
// the step after the module's own), so one whose latest traced use is exactly
// step_id is released, before the reuse-distance walk. Max reuse distance 0
// stops that walk at once. Modules {1 wte, 13 lm_head} share tensor 0; with
// prefetch on, wte's prefetch pops lm_head's use (step 1) of the already
// available tensor 0, so its most recent step is 1.
TEST_CASE("stage 3: a module releases a tensor whose most recent traced use is the next step",
          "[expected]") {
  // Prefetch 50000000, reuse 0: recent 1 <= step 1, so wte releases tensor 0 and lm_head
  // gathers it again.
  CHECK(second_pass(stage3_config(50000000, 1000000000, 0), {1, 13}) ==
        std::vector<std::vector<int>>{{0}, {0}});
  // Reuse 1: the walk from step 1 sees lm_head's tensor 0 (0 < 1) and keeps it.
  CHECK(second_pass(stage3_config(50000000, 1000000000, 1), {1, 13}) ==
        std::vector<std::vector<int>>{{0}});
  // {1 wte, 2 wpe, 13 lm_head}, reuse 0: wte's prefetch takes wpe (6 elements) and pops
  // lm_head's use of tensor 0 at step 2; 2 > step 1 keeps it, so lm_head gathers nothing.
  CHECK(second_pass(stage3_config(50000000, 1000000000, 0), {1, 2, 13}) ==
        std::vector<std::vector<int>>{{0}, {1}});
}

// stage3.py _create_fp16_sub_groups: a group whose partition_numel sum is <=
// sub_group_size is one sub-group; otherwise tensors join in group order and a
// sub-group closes when its running sum is >= sub_group_size (or at the group's
// last tensor). At W 2 the decay group {0,1,4,6,10,12} has pieces 8 3 14 5 18 18
// (66) and the no-decay group {2,3,5,7,8,9,11,13,14,15} 2 2 5 2 2 2 6 2 2 2 (27).
TEST_CASE("stage 3: a sub-group closes when its pieces reach sub_group_size", "[expected]") {
  const ParamTable t(hand_sized_shape());
  const std::vector<ParamGroup> groups = make_param_groups(t, "two");
  auto sub_groups = [&](int64_t size) {
    ZeroConfig z;
    z.stage = 3;
    z.sub_group_size = size;
    return Stage3Layout(t, groups, 2, z).sub_groups();
  };
  using Groups = std::vector<std::vector<int>>;
  // 11: decay 8, 8+3 = 11 >= 11 | 14 | 5, 5+18 = 23 | 18 (last); no-decay 2,4,9,11 >= 11 |
  // 2,4,10,12 | 2,4 (last).
  CHECK(sub_groups(11) ==
        Groups{{0, 1}, {4}, {6, 10}, {12}, {2, 3, 5, 7}, {8, 9, 11, 13}, {14, 15}});
  // 12: decay 8, 11, 11+14 = 25 >= 12 | 5, 23 | 18; no-decay 2,4,9,11,13 | 2,8,10,12 | 2.
  CHECK(sub_groups(12) == Groups{{0, 1, 4}, {6, 10}, {12}, {2, 3, 5, 7, 8}, {9, 11, 13, 14}, {15}});
  // 27: the no-decay group's 27 <= 27 is whole; decay 8,11,25,30 >= 27 | 18, 36.
  CHECK(sub_groups(27) == Groups{{0, 1, 4, 6}, {10, 12}, {2, 3, 5, 7, 8, 9, 11, 13, 14, 15}});
  // 66: the decay group's 66 <= 66 is whole too.
  CHECK(sub_groups(66) == Groups{{0, 1, 4, 6, 10, 12}, {2, 3, 5, 7, 8, 9, 11, 13, 14, 15}});
}

// partitioned_param_coordinator.py __prefetch_nvme_param_partitions, after each
// fetch's prefetch: walking the rest of the trace queue, it stops once the
// elements considered are > 2 * the elements in flight (or the read-ahead list
// holds available_swap_in_buffers), taking NOT_AVAILABLE tensors and counting
// every use. kBlock's trace: 2,3 | 4,5 | 6,7 | 8,9 | 10,11 | 12,13, numels
// 3,3 | 27,9 | 9,3 | 3,3 | 36,12 | 36,3; prefetch 36 gathers as in the case above.
TEST_CASE("stage 3 nvme: read-ahead covers the trace up to twice the elements in flight",
          "[expected]") {
  ZeroConfig z = stage3_config(36, 1000000000);
  z.offload_param.device = "nvme";
  z.offload_param.buffer_count = 100;
  std::vector<std::vector<int>> reads;
  CHECK(second_pass(z, kBlock, &reads) ==
        std::vector<std::vector<int>>{{2, 3}, {4, 5}, {6, 7, 8, 9, 10}, {11, 12}, {13}});
  // ln_1: 4,5 in flight (36, so up to 72): 9,12,15,18,54,66 (<= 72, take 12), 102 > 72 stops.
  // c_attn: 6..10 in flight (54): 12, 48, 51: all of 11,12,13. c_proj: 11,12 in flight: 13.
  // ln_2 prefetches 13 and the queue is empty: no hint after it.
  CHECK(reads == std::vector<std::vector<int>>{{6, 7, 8, 9, 10, 11, 12}, {11, 12, 13}, {13}});
  // buffer_count 6 stops ln_1's hint at six tensors.
  z.offload_param.buffer_count = 6;
  second_pass(z, kBlock, &reads);
  CHECK(reads == std::vector<std::vector<int>>{{6, 7, 8, 9, 10, 11}, {11, 12, 13}, {13}});
}

// A second micro-step's forward, before and from DeepSpeed 0.19.3 (stage3.py
// backward_epilogue calls the coordinator's release_backward_leftovers, which
// frees the parameters of modules whose post-backward hook never ran). Modules
// {1 wte, 2 wpe, 4 ln_1, 13 lm_head}, forward then backward 13, 4, 2, 1; no
// prefetch, reuse distance 0, nothing persistent. The embeddings' inputs carry
// no gradient, so their backward release does nothing (no hook runs): the
// first pass (recording) ends with wte {0} and wpe {1} gathered. Every other
// release frees its tensors (the reuse walk stops at once).
//   0.17.6: the second pass finds {0} and {1} available: wte and wpe gather
//   nothing; ln_1 {2,3}; lm_head {0} (wte released it); backward lm_head {0},
//   ln_1 {2,3}, wpe {1}, wte {0}: 6 calls.
//   0.19.8 (the default): end_pass releases what the backward left gathered, so
//   the second pass's forward starts with wte {0} and wpe {1}, then the same 6.
TEST_CASE("stage 3: the embeddings stay gathered into the next micro-step before 0.19.3 only",
          "[expected]") {
  const std::vector<int> modules = {1, 2, 4, 13};
  const std::vector<std::vector<int>> kept = {{2, 3}, {0}, {0}, {2, 3}, {1}, {0}};
  const std::vector<std::vector<int>> regathered = {{0}, {1}, {2, 3}, {0}, {0}, {2, 3}, {1}, {0}};
  ZeroConfig z = stage3_config(0, 1000000000, 0);
  CHECK(second_training_pass(z, modules) == regathered);
  for (const char* release : {"0.14.4", "0.17.6", "0.19.2"}) {
    INFO(release);
    z.deepspeed_version = parse_deepspeed_release(release);
    CHECK(second_training_pass(z, modules) == kept);
  }
  z.deepspeed_version = parse_deepspeed_release("0.19.3");
  CHECK(second_training_pass(z, modules) == regathered);
}

}  // namespace zt
