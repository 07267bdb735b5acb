// Weights between the whole model's flat layout and one tensor-parallel
// shard's (model/param_table.h: what each ShardCut keeps), or one pipeline
// stage's, or both: each of the part's tensors is found by name. Initialisation cuts
// every shard from the same whole model, so a split run starts from the
// weights an unsplit one does; gathering the shards back gives the whole.
#pragma once
#include <vector>

#include "model/param_table.h"

namespace zt {

// A contiguous run of elements the part shares with the whole model: n
// elements from `part` in the part's flat layout, from `whole` in the whole's.
struct WholeRun {
  size_t whole = 0, part = 0, n = 0;
};
// Every element of the part's layout once, by part offset; runs adjacent in
// both layouts merged (a table of the whole model is one run). What a
// checkpoint of a grid maps its pieces through (train/io/checkpoint.h).
std::vector<WholeRun> whole_runs(const ParamTable& whole, const ParamTable& part);

// The shard's flat weights, cut from the whole model's (whole.total() floats).
std::vector<float> take_shard(const ParamTable& whole, const ParamTable& shard,
                              const float* whole_weights);
// Writes the shard's weights into their places in the whole model's layout
// (tensors kept whole are written as the shard holds them).
void put_shard(const ParamTable& whole, const ParamTable& shard, const float* shard_weights,
               float* whole_weights);

}  // namespace zt
