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
    throw std::invalid_argument("whole_runs: the first table must be the whole model's");
}

// The whole model's tensor of the same name as the part's.
const ParamInfo& whole_of(const ParamTable& whole, const ParamInfo& part) {
  const ParamInfo* p = whole.find(part.name);
  if (!p) throw std::invalid_argument("whole_runs: " + part.name + " is not the model's");
  return *p;
}

}  // namespace

std::vector<WholeRun> whole_runs(const ParamTable& whole, const ParamTable& part) {
  check_whole(whole);
  std::vector<WholeRun> runs;
  for (const ParamInfo& p : part.params())
    for_each_run(whole_of(whole, p), p, part.split().index, [&](size_t w, size_t s, size_t n) {
      if (!runs.empty() && runs.back().whole + runs.back().n == w &&
          runs.back().part + runs.back().n == s)
        runs.back().n += n;
      else runs.push_back({w, s, n});
    });
  std::sort(runs.begin(), runs.end(),
            [](const WholeRun& a, const WholeRun& b) { return a.part < b.part; });
  return runs;
}

std::vector<float> take_shard(const ParamTable& whole, const ParamTable& shard,
                              const float* whole_weights) {
  std::vector<float> out(shard.total());
  for (const WholeRun& r : whole_runs(whole, shard))
    std::copy(whole_weights + r.whole, whole_weights + r.whole + r.n, out.data() + r.part);
  return out;
}

void put_shard(const ParamTable& whole, const ParamTable& shard, const float* shard_weights,
               float* whole_weights) {
  for (const WholeRun& r : whole_runs(whole, shard))
    std::copy(shard_weights + r.part, shard_weights + r.part + r.n, whole_weights + r.whole);
}

}  // namespace zt
