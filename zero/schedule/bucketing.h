// DeepSpeed's rules for cutting a stream of gradients into buckets, in one
// place. Tensors arrive in `order`; a bucket is a run of whole tensors (never
// cut) reduced at a point of the stream:
//   BeforeOverflow (stage_1_and_2.py): before a tensor joins, the open bucket
//     is reduced if its elements plus the tensor's exceed the limit, even when
//     it is empty (a larger tensor then leaves an empty bucket behind it).
//   BeforeOverflowUnlessEmpty (stage3.py): the same test, `and elements > 0`.
//   AfterPassing (engine.allreduce_no_retain, stage 0): the tensor joins
//     first; the bucket is reduced once its elements exceed the limit.
// What each bucket's layout and calls are is the gradient path's business.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/param_table.h"

namespace zt {

enum class BucketClose { BeforeOverflow, BeforeOverflowUnlessEmpty, AfterPassing };

struct ClosedBucket {
  std::vector<int> params;  // in arrival order
  size_t elements = 0;
  size_t at = 0;  // reduced before order[at] arrives; order.size(): after the last
};

// How the overflow rules read in `explain`.
constexpr const char* kOverflowRule =
    "the open bucket is reduced before a tensor that would overflow it; a larger tensor goes "
    "alone and is never cut";

// Bucket buffers of the ZeRO optimizer's stages (1-3): DeepSpeed's ipg double
// buffer with overlap_comm (one fills while the other reduces), else one.
// Stage 0's engine reduces on the compute stream with one whatever it says.
inline int zero_bucket_buffers(bool overlap_comm) { return overlap_comm ? 2 : 1; }

std::vector<ClosedBucket> close_buckets(const ParamTable& table, const std::vector<int>& order,
                                        int64_t limit, BucketClose rule);

}  // namespace zt
