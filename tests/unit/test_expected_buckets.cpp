// The bucket buffers a BucketReducer keeps alive, against DeepSpeed's rule
// counted by hand: with overlap_comm, DeepSpeed's stage 1/2 fills one bucket
// while the previous one reduces (two buffers, ipg_buffer of size 2); without
// it, each bucket is reduced and waited for at once (one buffer). Nothing else
// sees this (results are bit-identical either way), so the comm-buffer peak
// is what pins it.
//
// The model (n_layer 1, n_head 1, n_embd 3, vocab 5, seq_len 2) has 16 tensors
// of 15, 6, 3, 3, 27, 9, 9, 3, 3, 3, 36, 12, 36, 3, 3, 3 elements. With
// reduce_bucket_size 21 and one group, a bucket closes before a tensor that
// would take it past 21, so no bucket of several tensors exceeds 21 and the
// largest bucket is a 36-element tensor alone: every buffer holds 36 fp32
// elements, 144 bytes.
#include <memory>
#include <vector>

#include "model/gpt.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "zero/comm/communicators.h"
#include "zero/schedule/stage012_schedule.h"
#include "zero/stages/bucket_reducer.h"

namespace zt {

TEST_CASE("overlap_comm keeps two bucket buffers alive, one without it", "[expected]") {
  const ParamTable table(hand_sized_shape());
  REQUIRE(table.total() == 174);
  for (const bool overlap : {false, true}) {
    INFO("overlap_comm " << overlap);
    ZeroConfig z;
    z.stage = 2;
    z.reduce_bucket_size = 21;
    z.overlap_comm = overlap;
    const Stage012Schedule s =
        make_stage012_schedule(setup_for(z, table, "one"), table, 1, DType::F32);
    REQUIRE(s.grads.buckets.size() >= 3);  // enough buckets for a third buffer to show
    REQUIRE(s.grads.largest_bucket() == 36);
    CHECK(s.grads.buffers == (overlap ? 2 : 1));
    std::unique_ptr<Ops> ops = make_cpu_ops();
    std::unique_ptr<Communicator> comm = make_single_communicator(*ops);
    std::vector<void*> grads;
    for (const ParamInfo& p : table.params()) {
      grads.push_back(ops->alloc(p.numel * sizeof(float), MemCategory::Grads));
      ops->memzero(grads.back(), p.numel * sizeof(float));
    }
    const uint64_t before = ops->ledger().peak(MemCategory::CommBuffers);
    {
      BucketReducer reducer(s.grads, *ops, *comm, DType::F32,
                            [](const BucketSlice&, const void*) {});
      reducer.begin();
      for (int p : s.grads.order) reducer.arrive(p, grads[p]);
      reducer.finish();
    }
    const uint64_t buffers = overlap ? 2 : 1;  // DeepSpeed's double buffer, or one
    CHECK(ops->ledger().peak(MemCategory::CommBuffers) - before == buffers * 36 * sizeof(float));
    for (void* g : grads) ops->release(g);
  }
}

// zerotrain's native_reduce_scatter cuts the flat buffer into chunks of
// W x 64 elements (128 at W = 2, reduce_bucket_size 128) and reduces a chunk
// as soon as its last gradient arrives; when one tensor completes several
// chunks at once they go top-down, the order the backward walks the buffer.
// Model n_layer 1, n_head 1, n_embd 8, vocab 16, T 4, one group, offsets:
// wte 0 (128), wpe 128, ln_1 160/168, c_attn.w 176 (192), c_attn.b 368,
// attn.c_proj.w 392 (64), .b 456, ln_2 464/472, c_fc.w 480 (256), c_fc.b 736,
// mlp.c_proj.w 768 (256), .b 1024, ln_f 1032/1040, end 1048 -> 9 chunks.
// Arrival (the backward's gradient order): 14 15 13 12 11 10 8 9 7 6 5 4 2 3 1 0.
// reduce_at[k + 1] holds the chunks the k-th arrival completes:
//   k = 2 (13): chunk 8 [1024, 1152) holds only 13-15;
//   k = 3 (12, 768..1024): chunks 6 and 7 lie inside it, top-down: 7, 6;
//   k = 5 (10, 480..736): chunk 5 [640, 768) (11 came at k = 4) and chunk 4
//     [512, 640), inside it: 5, 4;
//   k = 10 (c_attn.b, 368..392): the last of chunk 3 [384, 512);
//   k = 11 (c_attn.w, 176..368): the last of chunk 2 [256, 384);
//   k = 14 (wpe): the last of chunk 1 [128, 256); k = 15 (wte): chunk 0.
TEST_CASE("native_reduce_scatter reduces chunks completed together top-down", "[expected]") {
  const ParamTable table(gpt_shape(1, 1, 8, 16, 4));
  ZeroConfig z;
  z.stage = 2;
  z.native_reduce_scatter = true;
  z.reduce_bucket_size = 128;
  const Stage012Schedule s =
      make_stage012_schedule(setup_for(z, table, "one"), table, 2, DType::F32);
  REQUIRE(s.layout->partition().groups().size() == 9);
  REQUIRE(s.grads.order == std::vector<int>{14, 15, 13, 12, 11, 10, 8, 9, 7, 6, 5, 4, 2, 3, 1, 0});
  std::vector<std::vector<int>> want(17);
  want[3] = {8};
  want[4] = {7, 6};
  want[6] = {5, 4};
  want[11] = {3};
  want[12] = {2};
  want[15] = {1};
  want[16] = {0};
  CHECK(s.grads.reduce_at == want);
}

}  // namespace zt
