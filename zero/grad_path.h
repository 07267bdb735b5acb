// Gradient reduction paths for stages 1 and 2: how the gradients, arriving in
// a fixed order, fill buckets and how each bucket is summed over ranks so that
// each rank ends up with the sum over the pieces it owns.
//
// DeepSpeed's four (stage_1_and_2.py), chosen exactly as DeepSpeed chooses
// them, share DeepSpeed's bucketing: before a tensor joins the open bucket,
// the bucket is reduced if its elements plus the tensor's exceed
// reduce_bucket_size (an empty one too: a tensor larger than the bucket then
// goes alone, and is never cut). zerotrain's true reduce-scatter uses aligned
// chunks of the layout as buckets instead.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "zero/flat_layout.h"
#include "zero/schedule.h"
#include "zero/zero_config.h"

namespace zt {

class GradPath {
 public:
  virtual ~GradPath() = default;
  virtual std::string key() const = 0;       // summary.json's grad_path value
  virtual std::string describe() const = 0;  // the words rank 0 prints at start
  // Which switch (and value) chose this path, for `explain`.
  virtual std::string chosen_by() const = 0;
  virtual BucketSchedule schedule(const std::vector<int>& order) const = 0;
};

// DeepSpeed's selection: contiguous_gradients false -> buffered all-reduce fallback;
// reduce_scatter false -> plain all-reduce; else use_multi_rank_bucket_allreduce
// -> packed multi-rank all-reduce, or one rooted reduce per owner. zerotrain's
// native_reduce_scatter overrides all of them (and needs FlatLayout::aligned).
std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const ParamTable& table,
                                         const FlatLayout& layout);

// The owners' pieces of tensor p in the layout, in order.
std::vector<BucketSlice> owner_pieces(const ParamTable& table, const FlatLayout& layout, int p);

// A path's layout of one DeepSpeed bucket: its tensors' owner pieces in
// arrival order (offset unset) -> the bucket with slices placed and calls listed.
using BucketFill = GradBucket (*)(const std::vector<BucketSlice>& pieces, int64_t bucket_size);
// DeepSpeed's bucketing over `order`, each bucket laid out by `fill`.
BucketSchedule deepspeed_buckets(const ParamTable& table, const FlatLayout& layout,
                                 const std::vector<int>& order, int64_t bucket_size,
                                 BucketFill fill);

std::unique_ptr<GradPath> make_allreduce_path(const ParamTable& t, const FlatLayout& l,
                                              int64_t bucket, bool fallback);
std::unique_ptr<GradPath> make_multi_rank_allreduce_path(const ParamTable& t, const FlatLayout& l,
                                                         int64_t bucket);
std::unique_ptr<GradPath> make_per_owner_reduce_path(const ParamTable& t, const FlatLayout& l,
                                                     int64_t bucket);
std::unique_ptr<GradPath> make_reduce_scatter_path(const ParamTable& t, const FlatLayout& l);

}  // namespace zt
