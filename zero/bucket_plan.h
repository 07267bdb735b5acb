// Static gradient-bucket plans. Gradients become ready in descending flat order
// (final layernorm, last block, ..., embeddings), so every bucket is a
// contiguous flat range and the plan is fixed before training, which is what
// lets `zerotrain plan` predict every collective exactly.
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_table.h"
#include "zero/partition.h"

namespace zt {

// DeepSpeed's rule: walk tensors in backward order; when adding the next tensor
// would overflow bucket_size, reduce the bucket first. A tensor larger than the
// bucket becomes a bucket of its own. Covers [0, total). Result in backward order.
std::vector<FlatRange> plan_tensor_buckets(const ParamTable& table, int64_t bucket_size);

// zerotrain's reduce-scatter plan: fixed chunks of the padded layout cut from the
// top, each a multiple of world*kAlign elements (so each can be reduce-scattered
// with equal slices). Covers [0, padded_total). Result in backward order.
std::vector<FlatRange> plan_aligned_buckets(size_t padded_total, int world, int64_t bucket_size);

// Splits a range into chunks of at most `chunk` elements (DeepSpeed's chunked
// collectives), in order.
std::vector<FlatRange> split_range(FlatRange r, int64_t chunk);

}  // namespace zt
