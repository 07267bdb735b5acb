// What `plan` lists for the tensor group (the model's own combine points,
// issued as TensorParallelHooks issues them; tests/mpi/test_tensor_parallel.cpp
// checks them call for call against a run) against the closed form of
// Megatron-LM's tensor-parallel volume (zero/analysis/grid_volume.h), derived
// independently from the papers: per primitive, calls and payload bytes.
#include <vector>

#include "model/gpt.h"
#include "tests/support/catch.h"
#include "zero/analysis/grid_volume.h"
#include "zero/analysis/tensor_plan.h"

namespace zt {

TEST_CASE("plan's tensor calls move the closed form's volume", "[tensor_split][grid]") {
  GPTConfig c;
  c.n_layer = 3;
  c.n_head = 8;
  c.n_embd = 64;
  c.vocab_size = 512;
  c.seq_len = 32;
  for (int T : {2, 4})
    for (Recompute r : {Recompute::None, Recompute::Attn, Recompute::Block})
      for (DType model : {DType::F32, DType::BF16}) {
        GridShape g;
        g.tp = T;
        g.micro_batches = 3;
        g.micro_batch = 2;
        g.seq = 16;
        const ParamTable shard(c, TensorSplit{T, 0});
        const std::vector<PlannedCall> planned = plan_tensor_calls(
            GPT::combine_points(shard, r), shard, g.micro_batches, g.tokens(), model, false);
        const PrimitiveTotals got = totals(planned, T, NodeMap::uniform(T, T));
        const GridVolume want = tensor_volume(g, c, model, r, 0);
        uint64_t reduces = 0, gathers = 0;
        double reduce_bytes = 0, gather_bytes = 0;
        for (const VolumeTerm& t : want.terms) {
          REQUIRE((t.call == GridCall::AllReduce || t.call == GridCall::AllGather));
          (t.call == GridCall::AllReduce ? reduces : gathers) += t.calls;
          (t.call == GridCall::AllReduce ? reduce_bytes : gather_bytes) += t.payload_bytes;
        }
        INFO("T " << T << ", recompute " << recompute_name(r) << ", " << dtype_name(model));
        CHECK(got[static_cast<int>(Primitive::AllReduce)].calls == reduces);
        CHECK(got[static_cast<int>(Primitive::AllGather)].calls == gathers);
        CHECK(got[static_cast<int>(Primitive::AllReduce)].bytes == reduce_bytes);
        CHECK(got[static_cast<int>(Primitive::AllGather)].bytes == gather_bytes);
        CHECK(got[static_cast<int>(Primitive::AllReduce)].bus_bytes ==
              Approx(want.bus_bytes(GridCall::AllReduce)));
      }
}

}  // namespace zt
