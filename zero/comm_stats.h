// Counting wrapper around any Communicator: per primitive, the calls, the
// payload bytes as nccl-tests counts them (the whole buffer: all-reduce and
// reduce their count, reduce-scatter its input, all-gather its output,
// broadcast its count), the bus bytes (payload x nccl-tests' bus factor:
// all-reduce 2(W-1)/W, reduce-scatter and all-gather (W-1)/W, reduce and
// broadcast 1) and the seconds from issue to completion. Also the exposed
// time: seconds the caller spent blocked in wait(). Optionally writes one JSON
// line per collective (system.comm_trace).
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "zero/communicator.h"

namespace zt {

struct PrimitiveStats {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  double bus_bytes = 0;
  double seconds = 0;
};

struct CommStats {
  std::array<PrimitiveStats, static_cast<int>(Primitive::kCount)> by_primitive{};
  double exposed_seconds = 0;  // time blocked in wait()
  PrimitiveStats& operator[](Primitive p) { return by_primitive[static_cast<int>(p)]; }
  const PrimitiveStats& operator[](Primitive p) const { return by_primitive[static_cast<int>(p)]; }
  CommStats minus(const CommStats& earlier) const;
};

double bus_factor(Primitive p, int world);
uint64_t payload_bytes(Primitive p, size_t count, DType t, int world);

class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(std::unique_ptr<Communicator> inner);
  ~CountingCommunicator() override;
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  std::string name() const override { return inner_->name(); }
  Handle all_reduce(void* buf, size_t n, DType t) override;
  Handle reduce_scatter(const void* send, void* recv, size_t n, DType t) override;
  Handle all_gather(const void* send, void* recv, size_t n, DType t) override;
  Handle reduce(const void* send, void* recv, size_t n, DType t, int root) override;
  Handle broadcast(void* buf, size_t n, DType t, int root) override;
  void barrier() override { inner_->barrier(); }
  [[noreturn]] void abort(const std::string& why) override {
    inner_->abort(why);
    std::_Exit(1);  // unreachable: every communicator's abort ends the process
  }

  const CommStats& stats() const { return stats_; }
  // One JSON line per collective into this file (rank-local).
  void open_trace(const std::string& path);
  void set_step(int64_t step) { step_ = step; }

 private:
  Handle record(Primitive p, size_t count, DType t, int root, Handle h);
  std::unique_ptr<Communicator> inner_;
  CommStats stats_;
  FILE* trace_ = nullptr;
  int64_t step_ = 0;
};

}  // namespace zt
