// Which tensors a tensor shard counts toward the gradient norm (Megatron's
// rule: cut tensors on every shard, whole ones on shard 0 only), and that the
// optimizer's pieces carry their tensor's answer.
#include <memory>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "zero/comm/communicators.h"
#include "zero/layout/flat_layout.h"
#include "zero/layout/param_groups.h"
#include "zero/stages/model_parallel_norm.h"

namespace zt {

TEST_CASE("tensor_parallel_norm counts whole tensors on tensor rank 0 only",
          "[tensor_parallel][clip]") {
  auto ops = make_cpu_ops();
  std::unique_ptr<Communicator> single = make_single_communicator(*ops);
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 12;
  c.n_embd = 48;
  c.vocab_size = 96;
  c.seq_len = 8;
  for (int index : {0, 1, 2}) {
    const ParamTable shard(c, TensorSplit{3, index});
    const ModelParallelNorm mp = tensor_parallel_norm(shard, *single);
    REQUIRE(mp.counts.size() == shard.params().size());
    CHECK(mp.groups == std::vector<Communicator*>{single.get()});
    for (size_t p = 0; p < shard.params().size(); p++) {
      INFO(shard.params()[p].name << " on shard " << index);
      CHECK(mp.counts[p] == (shard.params()[p].cut != ShardCut::Whole || index == 0));
    }
    // Every piece of a stage-1 layout lands on its tensor's answer.
    const std::vector<OptimPiece> pieces = mark_norm_pieces(
        FlatLayout::deepspeed(shard, make_param_groups(shard, "two"), 2, false).pieces(shard, 1),
        shard, mp);
    for (const OptimPiece& piece : pieces) {
      const ParamInfo* owner = nullptr;
      for (const ParamInfo& p : shard.params())
        if (p.offset <= piece.flat_begin && piece.flat_begin < p.offset + p.numel) owner = &p;
      REQUIRE(owner);
      CHECK(piece.in_norm == (owner->cut != ShardCut::Whole || index == 0));
    }
  }
}

}  // namespace zt
