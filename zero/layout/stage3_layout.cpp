#include "zero/layout/stage3_layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "zero/comm/quantized_reduce.h"
#include "zero/schedule/bucketing.h"
#include "zero/schedule/grad_path_registry.h"

namespace zt {

Stage3Layout::Stage3Layout(const ParamTable& table, const std::vector<ParamGroup>& groups,
                           int world, const ZeroConfig& z)
    : world_(world), hpz_(std::min(std::max(1, z.zero_hpz_partition_size), world)) {
  // DeepSpeed's _create_zero_param_parallel_group: min(size, W), which must divide W.
  if (world % hpz_ != 0)
    throw std::invalid_argument("zero.zero_hpz_partition_size " + std::to_string(hpz_) +
                                " does not divide the world size " + std::to_string(world) +
                                " (DeepSpeed requires it)");
  const auto& params = table.params();
  const size_t n = params.size();
  piece_.assign(n, 0);
  shard_offset_.assign(n, 0);
  persistent_.assign(n, false);
  group_of_.assign(n, -1);
  sub_group_of_.assign(n, -1);
  // mark_persistent_parameters walks named_parameters in order.
  uint64_t persisted = 0;
  for (size_t p = 0; p < n; p++) {
    piece_[p] = (params[p].numel + world - 1) / world;
    if (persisted + params[p].numel > static_cast<uint64_t>(z.stage3_model_persistence_threshold))
      continue;
    if (static_cast<int64_t>(params[p].numel) <= z.stage3_param_persistence_threshold) {
      persistent_[p] = true;
      persisted += params[p].numel;
      persistent_order_.push_back(static_cast<int>(p));
    }
  }
  persistent_elems_ = persisted;
  // The step releases every tensor, persistent ones too, and each keeps a
  // secondary piece until the step ends.
  if (hpz_ > 1)
    for (size_t p = 0; p < n; p++) secondary_elems_ += secondary_piece(static_cast<int>(p));
  // Shard: groups in order, each tensor's piece in group order; sub-groups close
  // once their pieces reach sub_group_size (_create_fp16_sub_groups).
  for (size_t g = 0; g < groups.size(); g++) {
    group_decay_.push_back(groups[g].decay);
    size_t group_pieces = 0;
    for (int p : groups[g].params) group_pieces += piece_[p];
    const bool whole = static_cast<uint64_t>(z.sub_group_size) >= group_pieces;
    std::vector<int> sub;
    size_t sub_size = 0;
    for (int p : groups[g].params) {
      group_of_[p] = static_cast<int>(g);
      shard_offset_[p] = shard_size_;
      shard_size_ += piece_[p];
      sub.push_back(p);
      sub_size += piece_[p];
      if ((!whole && sub_size >= static_cast<uint64_t>(z.sub_group_size)) ||
          p == groups[g].params.back()) {
        for (int q : sub) sub_group_of_[q] = static_cast<int>(sub_groups_.size());
        sub_groups_.push_back(sub);
        sub.clear();
        sub_size = 0;
      }
    }
  }
}

std::vector<StepCall> Stage3Layout::norm_calls() const {
  std::vector<StepCall> out;
  for (size_t g = 0; g < sub_groups_.size(); g++)
    out.push_back({StepCall::Norm, Primitive::AllReduce, 1, DType::F64, static_cast<int>(g), 0,
                   "gradient norm, sub-group " + std::to_string(g)});
  return out;
}

std::vector<OptimPiece> Stage3Layout::pieces(const ParamTable& table, int rank) const {
  std::vector<OptimPiece> out;
  for (size_t p = 0; p < piece_.size(); p++) {
    const ParamInfo& info = table.params()[p];
    const size_t begin = static_cast<size_t>(rank) * piece_[p];
    if (begin >= info.numel) continue;
    const size_t n = std::min(piece_[p], info.numel - begin);
    out.push_back({info.offset + begin, shard_offset_[p], shard_offset_[p], n,
                   group_decay_[group_of_[p]], sub_group_of_[p]});
  }
  std::sort(out.begin(), out.end(), [](const OptimPiece& a, const OptimPiece& b) {
    return a.shard_offset < b.shard_offset;
  });
  return out;
}

// stage3.py: reduce_independent_p_g_buckets_and_remove_grads cuts the buckets
// (bucketing.h, BeforeOverflowUnlessEmpty); __reduce_and_partition_ipg_grads
// all-reduces a bucket when the registry's path says so and it fits, and
// otherwise sorts the bucket by parameter id and reduce-scatters it
// (reduce_scatter_coalesced: each tensor padded to W pieces of ceil(n / W), the
// pieces interleaved rank by rank so that rank r receives its piece of each).
bool Stage3Layout::quantized_gradients(const ZeroConfig& z, int ranks_per_node) const {
  return z.zero_quantized_gradients && ranks_per_node >= 1 && world_ % ranks_per_node == 0 &&
         world_ / ranks_per_node > 1;
}

// qgZ (__avg_scatter_grads -> all_to_all_quant_reduce): the bucket's tensors in
// parameter order, each laid out as its own reduce-scatter input.
BucketSchedule Stage3Layout::grad_buckets(const ParamTable& table, const std::vector<int>& order,
                                          const ZeroConfig& z, int ranks_per_node) const {
  const bool qgz = quantized_gradients(z, ranks_per_node);
  const bool path_all_reduces = select_grad_path(z).primitive == Primitive::AllReduce;
  BucketSchedule s;
  s.order = order;
  s.reduce_at.assign(order.size() + 1, {});
  const int W = world_;
  for (const ClosedBucket& c :
       close_buckets(table, order, z.reduce_bucket_size, BucketClose::BeforeOverflowUnlessEmpty)) {
    GradBucket b;
    b.params = c.params;
    const bool all_reduce =
        path_all_reduces && c.elements <= static_cast<size_t>(z.reduce_bucket_size);
    // Rank r's piece of p at base + r * stride: the whole pieces as one run,
    // then the last rank's shorter one (ranks past the end own only padding).
    auto slices_of = [&](int p, size_t base, size_t stride) {
      const size_t numel = table.params()[p].numel, piece = piece_[p];
      if (piece == 0) return;
      const int whole = static_cast<int>(std::min<size_t>(numel / piece, W));
      if (whole > 0) b.slices.push_back({p, 0, piece, 0, base, whole, stride});
      const size_t rest = numel - whole * piece;
      if (rest > 0) b.slices.push_back({p, whole * piece, rest, whole, base + whole * stride});
    };
    std::vector<int> sorted = c.params;
    std::sort(sorted.begin(), sorted.end());
    if (all_reduce) {
      for (int p : c.params) {
        slices_of(p, b.size, piece_[p]);
        b.size += table.params()[p].numel;
      }
      b.calls.push_back({Primitive::AllReduce, 0, b.size, -1});
    } else if (qgz) {
      for (int p : sorted) {
        slices_of(p, b.size, piece_[p]);
        QgzShape q;
        if (qgz_applies(table.params()[p].shape, W, ranks_per_node, &q))
          b.calls.push_back({Primitive::AllToAll, b.size, piece_[p], -1, q.groups});
        else b.calls.push_back({Primitive::ReduceScatter, b.size, piece_[p], -1});
        b.size += piece_[p] * W;
      }
    } else {
      size_t per_rank = 0;
      for (int p : sorted) per_rank += piece_[p];
      size_t at_rank = 0;
      for (int p : sorted) {
        slices_of(p, at_rank, per_rank);
        at_rank += piece_[p];
      }
      b.size = per_rank * W;
      b.calls.push_back({Primitive::ReduceScatter, 0, per_rank, -1});
    }
    s.reduce_at[c.at].push_back(static_cast<int>(s.buckets.size()));
    s.buckets.push_back(std::move(b));
  }
  return s;
}

}  // namespace zt
