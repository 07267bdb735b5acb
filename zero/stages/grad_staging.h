// Short-lived gradient space for one tensor at a time (stages 2 and 3): the
// model adds the tensor's gradient into it, the stage copies it into its
// buckets when it is complete, and the space returns to a free list for the
// next tensor. Counted as comm_buffers: it is gradient staging, not the
// sharded gradients.
#pragma once
#include <map>

#include "model/ops.h"

namespace zt {

class GradStaging {
 public:
  explicit GradStaging(Ops& ops) : ops_(ops) {}
  ~GradStaging() {
    for (auto& kv : live_) ops_.release(kv.second.first);
    for (auto& kv : free_) ops_.release(kv.second);
  }
  GradStaging(const GradStaging&) = delete;
  GradStaging& operator=(const GradStaging&) = delete;

  // Tensor u's space: the live one, or zeroed space of `bytes` (reusing a free
  // buffer that is large enough).
  void* acquire(int u, size_t bytes) {
    auto live = live_.find(u);
    if (live != live_.end()) return live->second.first;
    void* buf = nullptr;
    auto it = free_.lower_bound(bytes);
    if (it != free_.end()) {
      buf = it->second;
      free_.erase(it);
    } else {
      buf = ops_.alloc(bytes, MemCategory::CommBuffers);
    }
    ops_.memzero(buf, bytes);
    live_[u] = {buf, bytes};
    return buf;
  }
  const char* get(int u) const { return static_cast<const char*>(live_.at(u).first); }
  void release(int u) {
    auto it = live_.find(u);
    free_.insert({it->second.second, it->second.first});
    live_.erase(it);
  }

 private:
  Ops& ops_;
  std::map<int, std::pair<void*, size_t>> live_;
  std::multimap<size_t, void*> free_;
};

}  // namespace zt
