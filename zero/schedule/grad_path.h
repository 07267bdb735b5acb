// Gradient reduction paths for stages 1 and 2: how the gradients, arriving in
// a fixed order, fill buckets and how each bucket is summed over ranks so that
// each rank ends up with the sum over the pieces it owns.
//
// DeepSpeed's four (stage_1_and_2.py), selected by the registry
// (grad_path_registry.h), share DeepSpeed's bucketing (bucketing.h,
// BeforeOverflow: a tensor larger than the bucket goes alone, never cut).
// zerotrain's true reduce-scatter uses aligned chunks of the layout as
// buckets instead.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/param_table.h"
#include "zero/layout/flat_layout.h"
#include "zero/schedule/grad_path_registry.h"
#include "zero/schedule/schedule.h"
#include "zero/zero_config.h"

namespace zt {

class GradPath {
 public:
  explicit GradPath(const GradPathRow& row) : row_(row) {}
  virtual ~GradPath() = default;
  const GradPathRow& row() const { return row_; }
  virtual BucketSchedule schedule(const std::vector<int>& order) const = 0;

 private:
  const GradPathRow& row_;
};

// The implementation of the path select_grad_path(z) names (native_reduce_scatter
// needs FlatLayout::aligned).
std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const ParamTable& table,
                                         const FlatLayout& layout);

// The owners' pieces of tensor p in the layout, in order; the whole slices of
// consecutive ranks as one run (BucketSlice::ranks).
std::vector<BucketSlice> owner_pieces(const ParamTable& table, const FlatLayout& layout, int p);

// A path's layout of one DeepSpeed bucket: its tensors' owner pieces in
// arrival order (offset unset) -> the bucket with slices placed and calls listed.
using BucketFill = GradBucket (*)(const std::vector<BucketSlice>& pieces, int64_t bucket_size);
// DeepSpeed's bucketing over `order`, each bucket laid out by `fill`.
BucketSchedule deepspeed_buckets(const ParamTable& table, const FlatLayout& layout,
                                 const std::vector<int>& order, int64_t bucket_size,
                                 BucketFill fill);

// What one all-reduce path's bucket puts on the wire.
enum class AllReduceFill {
  // The bucket's gradients; an empty bucket issues nothing (the buffered
  // fallback, which flattens first; the plain path from DeepSpeed 0.14.5,
  // whose gradient_reduction_w_predivide returns on an empty tensor).
  Filled,
  // The same, but an empty bucket still issues a 0-element all-reduce (the
  // plain path in 0.14.1-0.14.4).
  FilledEmptyToo,
  // reduce_bucket_size elements (the whole buffer) however few it holds (the
  // plain path before 0.14.1).
  WholeBuffer,
};
std::unique_ptr<GradPath> make_allreduce_path(const GradPathRow& row, const ParamTable& t,
                                              const FlatLayout& l, int64_t bucket,
                                              AllReduceFill fill);
std::unique_ptr<GradPath> make_multi_rank_allreduce_path(const GradPathRow& row,
                                                         const ParamTable& t, const FlatLayout& l,
                                                         int64_t bucket);
// rooted: each owner's runs are rooted reduces; else all-reduces of the same
// runs (DeepSpeed 0.12.4-0.12.6, whose allreduce_bucket discards the root).
std::unique_ptr<GradPath> make_per_owner_reduce_path(const GradPathRow& row, const ParamTable& t,
                                                     const FlatLayout& l, int64_t bucket,
                                                     bool rooted);
std::unique_ptr<GradPath> make_per_slice_reduce_path(const GradPathRow& row, const ParamTable& t,
                                                     const FlatLayout& l, int64_t bucket);
std::unique_ptr<GradPath> make_reduce_scatter_path(const GradPathRow& row, const ParamTable& t,
                                                   const FlatLayout& l);

}  // namespace zt
