// A stage's schedule as data: the order tensors' gradients arrive in, the
// buckets they fill, where each piece of a gradient sits in its bucket's
// buffer, the collectives that reduce each bucket, and the collectives of the
// optimizer step. Engines execute it; `plan` and `explain` print it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "zero/comm/communicator.h"

namespace zt {

// A piece [param_offset, param_offset + n) of one tensor's gradient, owned by
// one rank (-1: every rank, stage 0's replicated sum), at `offset` in the
// bucket buffer; or a run of `ranks` such pieces for the consecutive owners
// owner, owner + 1, ...: piece k is [param_offset + k n, + n) of the tensor, at
// offset + k stride. Stage 3 splits every tensor over all W ranks this way, so
// one entry per tensor keeps its schedule's size independent of W (one entry
// per rank made it tensors x W, gigabytes for a large W).
struct BucketSlice {
  int param;
  size_t param_offset, n;
  int owner;
  size_t offset;
  int ranks = 1;
  size_t stride = 0;
  // The piece of the run's k-th owner, as a slice of its own.
  BucketSlice piece(int k) const {
    return {param, param_offset + k * n, n, owner + k, offset + k * stride};
  }
};

// One collective over the bucket buffer, in elements: all-reduce and reduce
// cover [offset, offset + count); a reduce-scatter's input is [offset, offset +
// count * W) and count is what each rank receives. AllToAll stands for qgZ's
// quantized hierarchical reduction (zero/comm/quantized_reduce.h) of one tensor,
// laid out as a reduce-scatter's input, in quant_groups blocks.
struct BucketCall {
  Primitive primitive;
  size_t offset, count;
  int root;                 // -1 unless rooted
  size_t quant_groups = 0;  // qgZ only
};

struct GradBucket {
  std::vector<int> params;          // in arrival order
  std::vector<BucketSlice> slices;  // every element of every tensor piece, laid out by the path
  std::vector<BucketCall> calls;    // in issue order
  size_t size = 0;                  // elements of the bucket buffer
  size_t owners() const;            // the distinct owners of its slices (-1 counts as one)
};

struct BucketSchedule {
  std::vector<int> order;           // tensors in arrival order
  std::vector<GradBucket> buckets;  // in reduction order
  // reduce_at[i]: buckets reduced when order[i] is about to arrive; reduce_at[n]:
  // after the last one.
  std::vector<std::vector<int>> reduce_at;
  // Bucket buffers: 2 lets one reduce while the next fills (overlap_comm); with
  // 1, each bucket is waited for as soon as it is issued.
  int buffers = 1;
  size_t largest_bucket() const;
};

// A collective of the optimizer step.
struct StepCall {
  enum Kind {
    Norm,           // all-reduce of one norm group's sum of squares (group -1: stage 0's
                    // clip_grad_norm_, the local norm divided by W)
    OverflowCheck,  // all-reduce (MAX) of one uint8: whether any rank's gradients hold an
                    // inf or NaN; the step is skipped when one does (the releases and dtypes
                    // that issue it: deepspeed_behaviours.h)
    ParamGather     // all-gather of `count` elements of each rank's slice of partition
                    // group `group`, from `offset` into the slice
  };
  Kind kind;
  Primitive primitive;
  size_t count;
  DType dtype;
  int group;
  size_t offset;
  std::string what;
};

}  // namespace zt
