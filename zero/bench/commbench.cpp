#include "zero/bench/commbench.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/host_floats.h"
#include "zero/comm/comm_stats.h"

namespace zt {

const std::vector<Primitive>& commbench_primitives() {
  static const std::vector<Primitive> all = {Primitive::AllReduce, Primitive::ReduceScatter,
                                             Primitive::AllGather, Primitive::Reduce,
                                             Primitive::Broadcast, Primitive::AllToAll};
  return all;
}

std::vector<uint64_t> commbench_sizes(Primitive p, DType t, int world, uint64_t min_bytes,
                                      uint64_t max_bytes) {
  const uint64_t es = dtype_size(t);
  const bool per_rank_slices =
      p == Primitive::ReduceScatter || p == Primitive::AllGather || p == Primitive::AllToAll;
  std::vector<uint64_t> sizes;
  for (uint64_t s = std::max<uint64_t>(min_bytes, 1); s <= max_bytes; s *= 2) {
    uint64_t count = std::max<uint64_t>(1, s / es);
    if (per_rank_slices) count = std::max<uint64_t>(world, count - count % world);
    const uint64_t bytes = count * es;
    if (sizes.empty() || sizes.back() != bytes) sizes.push_back(bytes);
    if (s > max_bytes / 2) break;  // no overflow on the next doubling
  }
  return sizes;
}

float commbench_value(uint64_t seed, int rank, uint64_t index, DType t) {
  if (t == DType::BF16 && rank >= 256) return 0;  // keeps every bf16 sum within 8 bits
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(rank) + 1) +
               0xd1b54a32d192ed03ULL * index;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<float>(static_cast<int>(z % 3) - 1);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double max_over_ranks(double x) {
  double out = x;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

uint64_t sum_over_ranks(uint64_t x) {
  uint64_t out = x;
  MPI_Allreduce(&x, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

// What the expected result needs: a value no call writes, for receive buffers
// and for the non-root ranks' broadcast buffer.
constexpr float kUnwritten = 5.0f;

// One primitive's buffers for a payload of `count` elements. In-place
// primitives (all-reduce, broadcast) use only recv.
struct Layout {
  uint64_t send = 0, recv = 0;
};

Layout layout_of(Primitive p, uint64_t count, int world) {
  switch (p) {
    case Primitive::AllReduce: return {0, count};
    case Primitive::ReduceScatter: return {count, count / world};
    case Primitive::AllGather: return {count / world, count};
    case Primitive::Reduce: return {count, count};
    case Primitive::Broadcast: return {0, count};
    case Primitive::AllToAll: return {count, count};
    default: break;
  }
  throw std::runtime_error(std::string("commbench: no layout for ") + primitive_name(p));
}

Handle issue(Communicator& comm, Primitive p, void* send, void* recv, uint64_t count, DType t,
             int root) {
  const int w = comm.world();
  switch (p) {
    case Primitive::AllReduce: return comm.all_reduce(recv, count, t);
    case Primitive::ReduceScatter: return comm.reduce_scatter(send, recv, count / w, t);
    case Primitive::AllGather: return comm.all_gather(send, recv, count / w, t);
    case Primitive::Reduce: return comm.reduce(send, recv, count, t, root);
    case Primitive::Broadcast: return comm.broadcast(recv, count, t, root);
    case Primitive::AllToAll: return comm.all_to_all(send, recv, count / w, t);
    default: break;
  }
  throw std::runtime_error(std::string("commbench: cannot issue ") + primitive_name(p));
}

// The exact result at element j of this rank's receive buffer; false where
// nothing is defined (a reduce's non-root ranks).
bool expected_at(Primitive p, const CommbenchSpec& s, DType t, int rank, int world, uint64_t count,
                 uint64_t j, float* out) {
  auto sum = [&](uint64_t i) {
    float acc = 0;
    for (int r = 0; r < world; r++) acc += commbench_value(s.seed, r, i, t);
    return acc;
  };
  const uint64_t slice = count / world;
  switch (p) {
    case Primitive::AllReduce: *out = sum(j); return true;
    case Primitive::ReduceScatter: *out = sum(rank * slice + j); return true;
    case Primitive::AllGather:
      *out = commbench_value(s.seed, static_cast<int>(j / slice), j % slice, t);
      return true;
    case Primitive::Reduce: *out = sum(j); return rank == s.root;
    case Primitive::Broadcast: *out = commbench_value(s.seed, s.root, j, t); return true;
    case Primitive::AllToAll:
      *out = commbench_value(s.seed, static_cast<int>(j / slice), rank * slice + j % slice, t);
      return true;
    default: return false;
  }
}

// Host staging of dtype-sized elements.
void put(std::vector<unsigned char>& raw, DType t, uint64_t i, float v) {
  if (t == DType::F32) {
    std::memcpy(raw.data() + 4 * i, &v, 4);
  } else {
    const uint16_t b = float_to_bf16(v);
    std::memcpy(raw.data() + 2 * i, &b, 2);
  }
}
float get(const std::vector<unsigned char>& raw, DType t, uint64_t i) {
  if (t == DType::F32) {
    float v;
    std::memcpy(&v, raw.data() + 4 * i, 4);
    return v;
  }
  uint16_t b;
  std::memcpy(&b, raw.data() + 2 * i, 2);
  return bf16_to_float(b);
}

// Device (or host) buffer released on every exit path.
class Buffer {
 public:
  Buffer(Ops& ops, uint64_t bytes)
      : ops_(ops), p_(bytes ? ops.alloc(bytes, MemCategory::CommBuffers) : nullptr) {}
  ~Buffer() {
    if (p_) ops_.release(p_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }

 private:
  Ops& ops_;
  void* p_;
};

}  // namespace

CommbenchPoint commbench_point(Communicator& comm, Ops& ops, Primitive p, DType t, uint64_t bytes,
                               const CommbenchSpec& spec) {
  const int rank = comm.rank(), world = comm.world();
  const uint64_t es = dtype_size(t);
  CommbenchPoint pt;
  pt.bytes = bytes;
  pt.count = bytes / es;
  if (pt.count * es != bytes || pt.count == 0)
    throw std::runtime_error("commbench: " + std::to_string(bytes) +
                             " B is not a whole number of " + dtype_name(t) + " elements");
  const Layout lay = layout_of(p, pt.count, world);
  if ((p == Primitive::ReduceScatter || p == Primitive::AllGather) && pt.count % world != 0)
    throw std::runtime_error("commbench: " + std::string(primitive_name(p)) + " of " +
                             std::to_string(pt.count) + " elements does not split over " +
                             std::to_string(world) + " ranks");
  Buffer send(ops, lay.send * es), recv(ops, lay.recv * es);

  // The checked call: rank-dependent inputs, a sentinel wherever the call must write.
  {
    std::vector<unsigned char> raw(std::max(lay.send, lay.recv) * es);
    if (lay.send) {
      for (uint64_t i = 0; i < lay.send; i++)
        put(raw, t, i, commbench_value(spec.seed, rank, i, t));
      ops.from_host(send.get(), raw.data(), lay.send * es);
    }
    const bool recv_is_input =
        p == Primitive::AllReduce || (p == Primitive::Broadcast && rank == spec.root);
    for (uint64_t j = 0; j < lay.recv; j++)
      put(raw, t, j, recv_is_input ? commbench_value(spec.seed, rank, j, t) : kUnwritten);
    ops.from_host(recv.get(), raw.data(), lay.recv * es);
    ops.synchronize();
    issue(comm, p, send.get(), recv.get(), pt.count, t, spec.root)->wait();
    ops.synchronize();
    ops.to_host(raw.data(), recv.get(), lay.recv * es);
    uint64_t wrong = 0;
    for (uint64_t j = 0; j < lay.recv; j++) {
      float want;
      if (expected_at(p, spec, t, rank, world, pt.count, j, &want) && get(raw, t, j) != want)
        wrong++;
    }
    pt.wrong = sum_over_ranks(wrong);
  }
  // Timed calls run on zeros: in-place sums would otherwise grow by W per call.
  if (lay.send) ops.memzero(send.get(), lay.send * es);
  ops.memzero(recv.get(), lay.recv * es);

  double warm_seconds = 0;
  int warm_calls = 0;
  for (int i = 0; i < spec.warmup; i++) {
    const auto t0 = Clock::now();
    issue(comm, p, send.get(), recv.get(), pt.count, t, spec.root)->wait();
    ops.synchronize();
    warm_seconds += seconds_since(t0);
    warm_calls++;
    if (spec.max_seconds > 0 && max_over_ranks(warm_seconds) > spec.max_seconds / 4) break;
  }
  pt.iters = spec.iters;
  if (spec.max_seconds > 0 && warm_calls > 0) {
    const double per_call = max_over_ranks(warm_seconds) / warm_calls;
    const double fit = per_call > 0 ? spec.max_seconds / per_call : spec.iters;
    pt.iters = static_cast<int>(std::clamp<double>(fit, 1, spec.iters));
  }

  std::vector<double> call_seconds(pt.iters);
  comm.barrier();
  const auto t0 = Clock::now();
  auto last = t0;
  for (int i = 0; i < pt.iters; i++) {
    issue(comm, p, send.get(), recv.get(), pt.count, t, spec.root)->wait();
    const auto now = Clock::now();
    call_seconds[i] = std::chrono::duration<double>(now - last).count();
    last = now;
  }
  ops.synchronize();
  const double mean = seconds_since(t0) / pt.iters;
  const double slowest = max_over_ranks(mean);
  pt.time_us = slowest * 1e6;
  // Each rank's own median call, the slowest rank's: a call's maximum over
  // ranks would take, call by call, whichever rank's completion jittered
  // late, and so overstate the typical call where ranks finish unevenly.
  std::sort(call_seconds.begin(), call_seconds.end());
  const int mid = pt.iters / 2;
  const double median =
      pt.iters % 2 ? call_seconds[mid] : (call_seconds[mid - 1] + call_seconds[mid]) / 2;
  pt.median_us = ops.on_device() ? std::nan("") : max_over_ranks(median) * 1e6;
  pt.algbw_GBps = slowest > 0 ? bytes / slowest / 1e9 : 0;
  pt.busbw_GBps = pt.algbw_GBps * bus_factor(p, world);
  return pt;
}

std::vector<CommbenchCurve> run_commbench(
    Communicator& comm, Ops& ops, const CommbenchSpec& spec,
    const std::function<void(const CommbenchCurve&, const CommbenchPoint&)>& on_point) {
  const int W = comm.world(), N = spec.group_size > 0 ? spec.group_size : W;
  const int S = spec.group_stride;
  if (S < 1 || N > W || W % N != 0 || (W / N) % S != 0)
    throw std::runtime_error("commbench: " + std::to_string(N) + " ranks " + std::to_string(S) +
                             " apart do not tile the world of " + std::to_string(W) + " ranks");
  if (spec.root < 0 || spec.root >= N)
    throw std::runtime_error("commbench: root " + std::to_string(spec.root) + " outside 0.." +
                             std::to_string(N - 1));
  if (spec.iters < 1 || spec.warmup < 0)
    throw std::runtime_error("commbench: needs iters >= 1 and warmup >= 0");
  std::unique_ptr<Communicator> group;
  if (N < W) {
    group = comm.subgroup(RankGroup{N, S}.members_of(comm.rank()));
  }
  Communicator& measured = group ? *group : comm;
  std::vector<CommbenchCurve> curves;
  for (Primitive p : spec.primitives) {
    for (DType t : spec.dtypes) {
      curves.push_back({p, t, {}});
      for (uint64_t bytes : commbench_sizes(p, t, N, spec.min_bytes, spec.max_bytes)) {
        curves.back().points.push_back(commbench_point(measured, ops, p, t, bytes, spec));
        if (on_point) on_point(curves.back(), curves.back().points.back());
      }
    }
  }
  return curves;
}

}  // namespace zt
