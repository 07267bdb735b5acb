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
  const Primitive kinds[] = {Primitive::AllReduce, Primitive::AllGather, Primitive::ReduceScatter};
  const GridCall closed[] = {GridCall::AllReduce, GridCall::AllGather, GridCall::ReduceScatter};
  for (bool sequence : {false, true})
    for (int T : {2, 4})
      for (Recompute r : {Recompute::None, Recompute::Attn, Recompute::Mlp, Recompute::Block})
        for (DType model : {DType::F32, DType::BF16}) {
          GridShape g;
          g.tp = T;
          g.micro_batches = 3;
          g.micro_batch = 2;
          g.seq = 16;
          g.sequence_parallel = sequence;
          const ParamTable shard(c, TensorSplit{T, 0, sequence});
          const std::vector<PlannedCall> planned = plan_tensor_calls(
              GPT::combine_points(shard, r), shard, g.micro_batches, g.tokens(), model, false);
          const PrimitiveTotals got = totals(planned, T, NodeMap::uniform(T, T));
          const GridVolume want = tensor_volume(g, c, model, r, 0);
          INFO("sequence " << sequence << ", T " << T << ", recompute " << recompute_name(r) << ", "
                           << dtype_name(model));
          uint64_t calls = 0;
          for (int k = 0; k < 3; k++) {
            uint64_t want_calls = 0;
            double want_bytes = 0;
            for (const VolumeTerm& t : want.terms)
              if (t.call == closed[k]) {
                want_calls += t.calls;
                want_bytes += t.payload_bytes;
              }
            INFO(primitive_name(kinds[k]));
            const auto& have = got[static_cast<int>(kinds[k])];
            CHECK(have.calls == want_calls);
            CHECK(have.bytes == want_bytes);
            CHECK(have.bus_bytes == Approx(want.bus_bytes(closed[k])));
            calls += want_calls;
          }
          CHECK(calls == want.calls());  // no primitive the closed form has is left out
        }
}

}  // namespace zt
