// zerotrain commbench (zero/commbench): the size ladder and the input values
// by hand ([commbench]); under mpirun at W = 1..4 ([mpi]) every primitive in
// fp32 and bf16 gives the exact result on fresh random inputs, a communicator
// that corrupts results is caught element for element, and the payload bytes
// commbench reports are the ones the counting communicator counts.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "tests/support/zero_harness.h"
#include "train/cli/commands.h"
#include "train/config/config.h"
#include "zero/bench/commbench.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

std::unique_ptr<Communicator> world_communicator(Ops& ops) {
  int w = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &w);
  return w == 1 ? make_single_communicator(ops) : make_mpi_communicator(ops);
}

CommbenchSpec small_spec() {
  CommbenchSpec s;
  s.dtypes = {DType::F32, DType::BF16};
  s.min_bytes = 4;
  s.max_bytes = 64 << 10;
  s.warmup = 1;
  s.iters = 2;
  s.max_seconds = 0;
  // Every rank must fill with the same seed: rank 0's.
  unsigned long long seed = test_seed();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  s.seed = seed;
  return s;
}

class DoneHandle : public CommHandle {
 public:
  void wait() override {}
  bool done() override { return true; }
};

// Corrupts results on purpose: rank 0's first all-reduce element is off by
// one, and the broadcast never reaches the other ranks.
class CorruptingCommunicator : public Communicator {
 public:
  explicit CorruptingCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  std::string name() const override { return "corrupting"; }
  Handle all_reduce(void* buf, size_t n, DType t) override {
    inner_->all_reduce(buf, n, t)->wait();
    if (rank() == 0) {
      if (t == DType::F32) {
        static_cast<float*>(buf)[0] += 1;
      } else {
        static_cast<uint16_t*>(buf)[0] ^= 0x0080;  // the lowest exponent bit: a different value
      }
    }
    return Handle(new DoneHandle());
  }
  Handle reduce_scatter(const void* s, void* r, size_t n, DType t) override {
    return inner_->reduce_scatter(s, r, n, t);
  }
  Handle all_gather(const void* s, void* r, size_t n, DType t) override {
    return inner_->all_gather(s, r, n, t);
  }
  Handle reduce(const void* s, void* r, size_t n, DType t, int root) override {
    return inner_->reduce(s, r, n, t, root);
  }
  Handle broadcast(void*, size_t, DType, int) override { return Handle(new DoneHandle()); }
  Handle all_to_all(const void* s, void* r, size_t n, DType t) override {
    return inner_->all_to_all(s, r, n, t);
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    return inner_->subgroup(members);
  }
  Handle send(const void* b, size_t n, DType t, int peer, int tag) override {
    return inner_->send(b, n, t, peer, tag);
  }
  Handle recv(void* b, size_t n, DType t, int peer, int tag) override {
    return inner_->recv(b, n, t, peer, tag);
  }
  void barrier() override { inner_->barrier(); }
  [[noreturn]] void abort(const std::string& why) override {
    inner_->abort(why);
    std::_Exit(1);  // unreachable: every communicator's abort ends the process
  }

 private:
  std::unique_ptr<Communicator> inner_;
};

}  // namespace

TEST_CASE("commbench sizes: powers of two in whole elements, W-divisible for slices",
          "[commbench]") {
  CHECK(commbench_sizes(Primitive::AllReduce, DType::F32, 4, 4, 64) ==
        std::vector<uint64_t>{4, 8, 16, 32, 64});
  // 1 B of bf16 is one element (2 B); 1 and 2 B give the same size once.
  CHECK(commbench_sizes(Primitive::Reduce, DType::BF16, 2, 1, 16) ==
        std::vector<uint64_t>{2, 4, 8, 16});
  // W = 3: counts 1, 2, 4, 8, 16 become 3, 3, 3, 6, 15 elements.
  CHECK(commbench_sizes(Primitive::ReduceScatter, DType::F32, 3, 4, 64) ==
        std::vector<uint64_t>{12, 24, 60});
  CHECK(commbench_sizes(Primitive::AllGather, DType::BF16, 4, 4, 32) ==
        std::vector<uint64_t>{8, 16, 32});
  CHECK(commbench_sizes(Primitive::Broadcast, DType::F32, 1, 1000, 5000) ==
        std::vector<uint64_t>{1000, 2000, 4000});
  CHECK(commbench_sizes(Primitive::AllReduce, DType::F32, 4, 128, 64).empty());
}

TEST_CASE("commbench values: -1, 0 or +1, seeded, rank-dependent, zero in bf16 from rank 256",
          "[commbench]") {
  const uint64_t seed = test_seed();
  int counts[3] = {0, 0, 0}, differ = 0;
  for (uint64_t i = 0; i < 3000; i++) {
    const float v = commbench_value(seed, 0, i, DType::F32);
    REQUIRE((v == -1 || v == 0 || v == 1));
    counts[static_cast<int>(v) + 1]++;
    differ += v != commbench_value(seed, 1, i, DType::F32);
    CHECK(v == commbench_value(seed, 0, i, DType::BF16));
    CHECK(commbench_value(seed, 256, i, DType::BF16) == 0);
  }
  for (int c : counts) CHECK(c > 800);  // each value about a third of the time
  CHECK(differ > 1500);                 // two ranks agree about a third of the time
  CHECK(commbench_value(seed, 3, 7, DType::F32) == commbench_value(seed, 3, 7, DType::F32));
}

TEST_CASE("commbench command: one-line errors for bad options", "[commbench]") {
  auto message = [](const std::vector<std::string>& args) {
    return error_of<ConfigError>([&] { run_commbench_command(args); });
  };
  require_parts(message({"--max-bytes", "12X"}),
                {"commbench: --max-bytes", "4096, 64K, 64M or 1G", "'12X'", "usage:"});
  require_parts(message({"--max-bytes", "8G"}), {"--max-bytes", "4 GiB", "'8G'"});
  require_parts(message({"--min-bytes", "1M", "--max-bytes", "4K"}),
                {"--max-bytes 4096 is below --min-bytes 1048576"});
  require_parts(message({"--primitives", "all_reduce,alltoall"}),
                {"unknown primitive 'alltoall'", "all_reduce, reduce_scatter", "all_to_all"});
  require_parts(message({"--device", "tpu"}), {"--device expects one of auto, cpu, cuda", "'tpu'"});
  require_parts(message({"--iters", "0"}), {"--iters", "[1, 1000000]", "'0'"});
  require_parts(message({"--dtype", "fp16", "--device", "cpu"}), {"--dtype", "'fp16'"});
  require_parts(message({"--root", "1000000", "--device", "cpu"}), {"--root", "'1000000'"});
  require_parts(message({"extra"}), {"unexpected argument 'extra'"});
  require_parts(message({"--host-nvme", "/no/such/dir"}),
                {"--host-nvme: '/no/such/dir'", "expected an existing directory"});
}

TEST_CASE("commbench: every primitive in fp32 and bf16 gives the exact result", "[mpi]") {
  auto ops = make_cpu_ops();
  auto comm = world_communicator(*ops);
  CommbenchSpec spec = small_spec();
  spec.root = comm->world() - 1;  // a root other than 0 where there is one
  const auto curves = run_commbench(*comm, *ops, spec, nullptr);
  REQUIRE(curves.size() == commbench_primitives().size() * 2);
  bool ok = true;
  for (const CommbenchCurve& c : curves) {
    INFO(primitive_name(c.primitive) << " " << dtype_name(c.dtype));
    const auto sizes =
        commbench_sizes(c.primitive, c.dtype, comm->world(), spec.min_bytes, spec.max_bytes);
    REQUIRE(c.points.size() == sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
      const CommbenchPoint& p = c.points[i];
      INFO("bytes " << p.bytes);
      ok = ok && p.bytes == sizes[i] && p.count * dtype_size(c.dtype) == p.bytes && p.wrong == 0 &&
           p.iters == spec.iters && p.time_us > 0 && p.median_us > 0;
      CHECK(p.wrong == 0);
      CHECK(p.busbw_GBps == Approx(p.algbw_GBps * bus_factor(c.primitive, comm->world())));
      CHECK(p.algbw_GBps == Approx(p.bytes / (p.time_us * 1e-6) / 1e9));
    }
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("commbench: a corrupted result is caught element for element", "[mpi]") {
  auto ops = make_cpu_ops();
  CorruptingCommunicator comm(world_communicator(*ops));
  CommbenchSpec spec = small_spec();
  spec.primitives = {Primitive::AllReduce, Primitive::Broadcast, Primitive::Reduce};
  spec.max_bytes = 256;
  const int w = comm.world();
  for (const CommbenchCurve& c : run_commbench(comm, *ops, spec, nullptr)) {
    for (const CommbenchPoint& p : c.points) {
      INFO(primitive_name(c.primitive) << " " << dtype_name(c.dtype) << " " << p.bytes << " B");
      if (c.primitive == Primitive::AllReduce) CHECK(p.wrong == 1);  // rank 0's first element
      if (c.primitive == Primitive::Broadcast) CHECK(p.wrong == (w - 1) * p.count);
      if (c.primitive == Primitive::Reduce) CHECK(p.wrong == 0);
    }
  }
}

TEST_CASE("commbench's bytes are the payload the counting communicator counts", "[mpi]") {
  auto ops = make_cpu_ops();
  CountingCommunicator comm(world_communicator(*ops));
  CommbenchSpec spec = small_spec();
  spec.max_bytes = 4096;
  const auto curves = run_commbench(comm, *ops, spec, nullptr);
  for (Primitive p : commbench_primitives()) {
    uint64_t bytes = 0, calls = 0;
    for (const CommbenchCurve& c : curves) {
      if (c.primitive != p) continue;
      for (const CommbenchPoint& pt : c.points) {
        // One checked call, the warm-up calls and the timed ones, each of pt.bytes.
        const uint64_t n = 1 + spec.warmup + pt.iters;
        bytes += n * pt.bytes;
        calls += n;
      }
    }
    INFO(primitive_name(p));
    CHECK(comm.stats()[p].calls == calls);
    CHECK(comm.stats()[p].bytes == bytes);
  }
}

}  // namespace zt
