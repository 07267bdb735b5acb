// Byte counts of live allocations by category, with per-category and total peaks.
// Backends record every alloc/free here; the memory report reads it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace zt {

enum class MemCategory { Params, Grads, Optimizer, Activations, CommBuffers, kCount };
inline const char* mem_category_name(MemCategory c) {
  static const char* names[] = {"params", "grads", "optimizer", "activations", "comm_buffers"};
  return names[static_cast<int>(c)];
}

class MemoryLedger {
 public:
  static constexpr int kN = static_cast<int>(MemCategory::kCount);
  void on_alloc(const void* p, size_t bytes, MemCategory c) {
    std::lock_guard<std::mutex> g(mu_);
    live_[p] = {bytes, c};
    int i = static_cast<int>(c);
    current_[i] += bytes;
    if (current_[i] > peak_[i]) peak_[i] = current_[i];
    total_ += bytes;
    if (total_ > peak_total_) peak_total_ = total_;
  }
  void on_free(const void* p) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;
    current_[static_cast<int>(it->second.second)] -= it->second.first;
    total_ -= it->second.first;
    live_.erase(it);
  }
  uint64_t current(MemCategory c) const { return current_[static_cast<int>(c)]; }
  uint64_t peak(MemCategory c) const { return peak_[static_cast<int>(c)]; }
  uint64_t current_total() const { return total_; }
  uint64_t peak_total() const { return peak_total_; }

 private:
  std::mutex mu_;
  std::unordered_map<const void*, std::pair<size_t, MemCategory>> live_;
  std::array<uint64_t, kN> current_{}, peak_{};
  uint64_t total_ = 0, peak_total_ = 0;
};

}  // namespace zt
