// The measurement core of `zerotrain commbench`: nccl-tests for zerotrain's own
// communicators. For every primitive zerotrain issues and every size from a
// minimum to a maximum by powers of two: one checked call, warm-up calls, then
// timed calls; the time is the mean per call, the maximum over ranks. Buffers
// come from the Ops backend, so a CUDA backend measures NCCL or the MPI
// communicator on device buffers. Timings and check results are combined over
// MPI_COMM_WORLD with MPI itself, outside the communicator being measured.
// With a group size N < W, every group of N ranks measures its own calls, all
// groups at once: what a group's call costs while every other group's runs
// beside it, the time still the maximum over all ranks. With stride S the
// group of rank r is the N ranks S apart from r's block of N·S ranks:
// S = 1 gives N consecutive ranks (the tensor groups of a tensor-innermost
// grid), S = T with N = D the data-parallel groups of that grid.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/ops.h"
#include "zero/comm/communicator.h"

namespace zt {

// The primitives commbench measures, in this order: every one zerotrain issues.
const std::vector<Primitive>& commbench_primitives();

struct CommbenchSpec {
  std::vector<Primitive> primitives = commbench_primitives();
  std::vector<DType> dtypes = {DType::F32};
  uint64_t min_bytes = 4, max_bytes = uint64_t(64) << 20;
  int warmup = 5, iters = 20;
  // Per size: when one call takes long, time only about this many seconds'
  // worth of calls (at least one); 0 = always `iters`.
  double max_seconds = 5;
  int root = 0;          // of reduce and broadcast, within the group
  int group_size = 0;    // ranks per measuring group; 0: the whole world
  int group_stride = 1;  // rank distance between a group's members
  uint64_t seed = 1;
};

struct CommbenchPoint {
  uint64_t bytes = 0;  // payload as zero/comm/comm_stats.h counts it (payload_bytes)
  uint64_t count = 0;  // bytes / element size
  int iters = 0;       // timed calls
  double time_us = 0;  // mean per call, maximum over ranks
  // Each rank's median over its timed calls, the maximum over ranks: robust
  // to a stalled call. Host backends only, where wait() blocks; NaN on device
  // backends, whose wait() only orders streams.
  double median_us = 0;
  double algbw_GBps = 0, busbw_GBps = 0;  // bytes / time; x bus_factor
  uint64_t wrong = 0;  // elements that differ from the exact result, summed over ranks
};

struct CommbenchCurve {
  Primitive primitive;
  DType dtype;
  std::vector<CommbenchPoint> points;
};

// The payload sizes measured for a primitive: min_bytes, doubling up to
// max_bytes, each rounded to whole elements (and for reduce-scatter and
// all-gather to a multiple of W elements, at least W); repeats dropped.
std::vector<uint64_t> commbench_sizes(Primitive p, DType t, int world, uint64_t min_bytes,
                                      uint64_t max_bytes);

// The value rank r contributes at element i: -1, 0 or +1 from a hash of (seed,
// r, i), so that every sum over up to 256 ranks is exact in fp32 and bf16
// whatever the order of the additions (in bf16 ranks from 256 on contribute 0).
float commbench_value(uint64_t seed, int rank, uint64_t index, DType t);

// Measures one size. Collective: every rank calls it with the same arguments.
CommbenchPoint commbench_point(Communicator& comm, Ops& ops, Primitive p, DType t, uint64_t bytes,
                               const CommbenchSpec& spec);

// Every curve of the spec; on_point (may be empty) sees each point as it is measured.
std::vector<CommbenchCurve> run_commbench(
    Communicator& comm, Ops& ops, const CommbenchSpec& spec,
    const std::function<void(const CommbenchCurve&, const CommbenchPoint&)>& on_point);

}  // namespace zt
