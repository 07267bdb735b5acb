// Gradient reduction paths for stages 1 and 2: how one bucket's gradients are
// summed over ranks so that each rank ends up with the sum over its owned
// pieces. A bucket is a contiguous flat range whose gradients sit packed in
// flat order at `data`. After every returned handle completes, the sum of each
// piece that this rank owns is at data + (piece.begin - range.begin); other
// parts of the buffer are unspecified.
//
// The paths are DeepSpeed's four (stage_1_and_2.py), chosen exactly as DeepSpeed
// chooses them, plus zerotrain's true reduce-scatter.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zero/communicator.h"
#include "zero/partition.h"
#include "zero/zero_config.h"

namespace zt {

struct Collective {
  Primitive primitive;
  size_t count;  // elements as passed to the call (per-rank receive count for reduce-scatter,
                 // per-rank send count for all-gather)
  int root;      // -1 unless rooted
};

class GradPath {
 public:
  virtual ~GradPath() = default;
  virtual std::string key() const = 0;       // summary.json's grad_path value
  virtual std::string describe() const = 0;  // the words rank 0 prints at start
  // The collectives this path issues for one bucket, in order (what `plan` prints).
  virtual std::vector<Collective> schedule(FlatRange bucket) const = 0;
  // Issues them; the caller waits on the handles.
  virtual std::vector<Handle> reduce(FlatRange bucket, void* data, DType t) = 0;
  // True when buckets must coincide with partition groups (reduce-scatter).
  virtual bool needs_aligned_buckets() const { return false; }
};

// DeepSpeed's selection: contiguous_gradients false -> buffered all-reduce fallback;
// reduce_scatter false -> plain all-reduce; else use_multi_rank_bucket_allreduce
// -> packed multi-rank all-reduce, or one rooted reduce per owner. zerotrain's
// native_reduce_scatter overrides all of them.
std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const Partition& partition,
                                         Communicator& comm);

std::unique_ptr<GradPath> make_allreduce_fallback_path(Communicator& comm);
std::unique_ptr<GradPath> make_allreduce_path(Communicator& comm);
std::unique_ptr<GradPath> make_multi_rank_allreduce_path(const Partition& p, Communicator& comm,
                                                         int64_t chunk);
std::unique_ptr<GradPath> make_per_owner_reduce_path(const Partition& p, Communicator& comm,
                                                     int64_t chunk);
std::unique_ptr<GradPath> make_reduce_scatter_path(const Partition& p, Communicator& comm);

}  // namespace zt
