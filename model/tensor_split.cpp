#include "model/tensor_split.h"

#include <algorithm>
#include <stdexcept>

namespace zt {
namespace {

// Calls run(whole_offset, shard_offset, n) for each contiguous run of
// elements that tensor `p` of the shard shares with the whole tensor.
template <typename Run>
void for_each_run(const ParamInfo& whole, const ParamInfo& shard, int index, Run run) {
  const size_t rows = static_cast<size_t>(shard.shape[0]);
  const size_t row_len = shard.numel / rows;  // 1 for a bias
  switch (shard.cut) {
    case ShardCut::Whole: run(whole.offset, shard.offset, shard.numel); return;
    case ShardCut::Rows: run(whole.offset + index * shard.numel, shard.offset, shard.numel); return;
    case ShardCut::QkvRows: {
      // q, k and v are each cut alike: rows [index * A, (index + 1) * A) of each.
      const size_t shard_rows = rows / 3, whole_rows = static_cast<size_t>(whole.shape[0]) / 3;
      for (size_t s = 0; s < 3; s++)
        run(whole.offset + (s * whole_rows + index * shard_rows) * row_len,
            shard.offset + s * shard_rows * row_len, shard_rows * row_len);
      return;
    }
    case ShardCut::Columns: {
      const size_t whole_cols = static_cast<size_t>(whole.shape[1]);
      for (size_t r = 0; r < rows; r++)
        run(whole.offset + r * whole_cols + index * row_len, shard.offset + r * row_len, row_len);
      return;
    }
  }
}

void check_whole(const ParamTable& whole) {
  if (whole.split().degree != 1 || whole.stage().stages != 1)
    throw std::invalid_argument("take_shard/put_shard: the first table must be the whole model's");
}

// The whole model's tensor of the same name as the part's.
const ParamInfo& whole_of(const ParamTable& whole, const ParamInfo& part) {
  const ParamInfo* p = whole.find(part.name);
  if (!p) throw std::invalid_argument("take_shard/put_shard: " + part.name + " is not the model's");
  return *p;
}

}  // namespace

std::vector<float> take_shard(const ParamTable& whole, const ParamTable& shard,
                              const float* whole_weights) {
  check_whole(whole);
  std::vector<float> out(shard.total());
  for (const ParamInfo& part : shard.params())
    for_each_run(whole_of(whole, part), part, shard.split().index,
                 [&](size_t w, size_t s, size_t n) {
                   std::copy(whole_weights + w, whole_weights + w + n, out.data() + s);
                 });
  return out;
}

void put_shard(const ParamTable& whole, const ParamTable& shard, const float* shard_weights,
               float* whole_weights) {
  check_whole(whole);
  for (const ParamInfo& part : shard.params())
    for_each_run(whole_of(whole, part), part, shard.split().index,
                 [&](size_t w, size_t s, size_t n) {
                   std::copy(shard_weights + s, shard_weights + s + n, whole_weights + w);
                 });
}

}  // namespace zt
