#include "zero/comm_stats.h"

#include <cstdint>
#include <stdexcept>

namespace zt {

const char* primitive_name(Primitive p) {
  static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "reduce",
                                "broadcast"};
  return names[static_cast<int>(p)];
}

double bus_factor(Primitive p, int W) {
  switch (p) {
    case Primitive::AllReduce: return 2.0 * (W - 1) / W;
    case Primitive::ReduceScatter:
    case Primitive::AllGather: return static_cast<double>(W - 1) / W;
    default: return 1.0;
  }
}

uint64_t payload_bytes(Primitive p, size_t count, DType t, int W) {
  const uint64_t b = static_cast<uint64_t>(count) * dtype_size(t);
  return (p == Primitive::ReduceScatter || p == Primitive::AllGather) ? b * W : b;
}

CommStats CommStats::minus(const CommStats& e) const {
  CommStats d;
  for (size_t i = 0; i < by_primitive.size(); i++) {
    d.by_primitive[i].calls = by_primitive[i].calls - e.by_primitive[i].calls;
    d.by_primitive[i].bytes = by_primitive[i].bytes - e.by_primitive[i].bytes;
    d.by_primitive[i].bus_bytes = by_primitive[i].bus_bytes - e.by_primitive[i].bus_bytes;
    d.by_primitive[i].seconds = by_primitive[i].seconds - e.by_primitive[i].seconds;
  }
  d.exposed_seconds = exposed_seconds - e.exposed_seconds;
  return d;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Completes the primitive's timing when the caller first observes completion.
class TimedHandle : public CommHandle {
 public:
  TimedHandle(Handle inner, Clock::time_point t0, double* seconds, double* exposed)
      : inner_(std::move(inner)), t0_(t0), seconds_(seconds), exposed_(exposed) {}
  void wait() override {
    if (finished_) return;
    auto w0 = Clock::now();
    inner_->wait();
    *exposed_ += since(w0);
    finish();
  }
  bool done() override {
    if (!finished_ && inner_->done()) finish();
    return finished_;
  }

 private:
  void finish() {
    finished_ = true;
    *seconds_ += since(t0_);
  }
  Handle inner_;
  Clock::time_point t0_;
  double* seconds_;
  double* exposed_;
  bool finished_ = false;
};

}  // namespace

CountingCommunicator::CountingCommunicator(std::unique_ptr<Communicator> inner)
    : inner_(std::move(inner)) {}

CountingCommunicator::~CountingCommunicator() {
  if (trace_) std::fclose(trace_);
}

void CountingCommunicator::open_trace(const std::string& path) {
  trace_ = std::fopen(path.c_str(), "w");
  if (!trace_) throw std::runtime_error(path + ": cannot open the comm trace for writing");
}

Handle CountingCommunicator::record(Primitive p, size_t count, DType t, int root, Handle h) {
  PrimitiveStats& s = stats_[p];
  const uint64_t bytes = payload_bytes(p, count, t, world());
  s.calls++;
  s.bytes += bytes;
  s.bus_bytes += bytes * bus_factor(p, world());
  if (trace_) {
    std::fprintf(trace_,
                 "{\"step\":%lld,\"rank\":%d,\"op\":\"%s\",\"count\":%zu,\"dtype\":\"%s\","
                 "\"bytes\":%llu,\"root\":%d}\n",
                 static_cast<long long>(step_), rank(), primitive_name(p), count, dtype_name(t),
                 static_cast<unsigned long long>(bytes), root);
  }
  return h;
}

#define ZT_TIMED(prim, count, t, root, call)                                      \
  do {                                                                            \
    auto t0 = Clock::now();                                                       \
    Handle h = call;                                                              \
    return record(prim, count, t, root,                                           \
                  Handle(new TimedHandle(std::move(h), t0, &stats_[prim].seconds, \
                                         &stats_.exposed_seconds)));              \
  } while (0)

Handle CountingCommunicator::all_reduce(void* buf, size_t n, DType t) {
  ZT_TIMED(Primitive::AllReduce, n, t, -1, inner_->all_reduce(buf, n, t));
}
Handle CountingCommunicator::reduce_scatter(const void* send, void* recv, size_t n, DType t) {
  ZT_TIMED(Primitive::ReduceScatter, n, t, -1, inner_->reduce_scatter(send, recv, n, t));
}
Handle CountingCommunicator::all_gather(const void* send, void* recv, size_t n, DType t) {
  ZT_TIMED(Primitive::AllGather, n, t, -1, inner_->all_gather(send, recv, n, t));
}
Handle CountingCommunicator::reduce(const void* send, void* recv, size_t n, DType t, int root) {
  ZT_TIMED(Primitive::Reduce, n, t, root, inner_->reduce(send, recv, n, t, root));
}
Handle CountingCommunicator::broadcast(void* buf, size_t n, DType t, int root) {
  ZT_TIMED(Primitive::Broadcast, n, t, root, inner_->broadcast(buf, n, t, root));
}

}  // namespace zt
