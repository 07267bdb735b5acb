// Per-op GPU time, for finding where a step's time goes (ZT_PROFILE_OPS=1).
// Each profiled op records a CUDA event before and after its launches on the
// compute stream; at exit the elapsed times are summed per op name (matmuls
// per shape) and printed as a table to stderr. Off by default: then a scope
// costs one branch.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace zt {

class OpProfiler {
 public:
  OpProfiler() : enabled_(std::getenv("ZT_PROFILE_OPS") != nullptr) {}
  ~OpProfiler() { report(); }

  class Scope {
   public:
    Scope(OpProfiler* p, cudaStream_t s, std::string name) : p_(p), s_(s) {
      if (!p_->enabled_) return;
      name_ = std::move(name);
      cudaEventCreate(&start_);
      cudaEventCreate(&stop_);
      cudaEventRecord(start_, s_);
    }
    ~Scope() {
      if (!p_->enabled_) return;
      cudaEventRecord(stop_, s_);
      p_->records_.push_back({name_, start_, stop_});
    }

   private:
    OpProfiler* p_;
    cudaStream_t s_;
    std::string name_;
    cudaEvent_t start_{}, stop_{};
  };

  bool enabled() const { return enabled_; }

 private:
  struct Record {
    std::string name;
    cudaEvent_t start, stop;
  };

  void report() {
    if (!enabled_ || records_.empty()) return;
    std::map<std::string, std::pair<int, double>> by_name;
    double total = 0;
    for (Record& r : records_) {
      cudaEventSynchronize(r.stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, r.start, r.stop);
      by_name[r.name].first++;
      by_name[r.name].second += ms;
      total += ms;
      cudaEventDestroy(r.start);
      cudaEventDestroy(r.stop);
    }
    std::vector<std::pair<double, std::string>> rows;
    for (auto& kv : by_name) rows.push_back({kv.second.second, kv.first});
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "op profile (ZT_PROFILE_OPS): GPU time per op, summed over the run\n");
    std::fprintf(stderr, "%-44s %8s %12s %7s\n", "op", "calls", "ms", "share");
    for (auto& [ms, name] : rows)
      std::fprintf(stderr, "%-44s %8d %12.2f %6.1f%%\n", name.c_str(), by_name[name].first, ms,
                   100 * ms / total);
    std::fprintf(stderr, "%-44s %8s %12.2f\n", "total", "", total);
  }

  bool enabled_;
  std::vector<Record> records_;
};

}  // namespace zt
