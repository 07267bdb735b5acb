#include "zero/bench/host_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "model/cpu/cpu_matmul.h"
#include "model/device_services.h"
#include "zero/optim/host_adamw.h"
#include "zero/optim/offload_store.h"

namespace zt {
namespace {

// Median seconds of `reps` timed calls of fn after one untimed one.
double median_seconds(int reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> s;
  for (int i = 0; i < reps; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return std::max(s[s.size() / 2], 1e-9);
}

// Host buffers released on scope exit.
struct HostBuffer {
  DeviceServices& services;
  void* p;
  HostBuffer(DeviceServices& s, size_t bytes, bool pinned)
      : services(s), p(s.alloc_host(bytes, MemCategory::CommBuffers, pinned)) {}
  ~HostBuffer() { services.release_host(p); }
  float* f() const { return static_cast<float*>(p); }
};

void measure_copies(Ops& ops, const HostBenchSpec& spec, HostBenchResult& r) {
  const size_t bytes = spec.elements * sizeof(float);
  DeviceServices& services = ops.services();
  HostBuffer host(services, bytes, true);
  void* dev = ops.alloc(bytes, MemCategory::CommBuffers);
  try {
    r.to_host_bytes_per_s = bytes / median_seconds(spec.reps, [&] {
                              services.wait_copy(services.to_host_async(host.p, dev, bytes));
                            });
    r.from_host_bytes_per_s = bytes / median_seconds(spec.reps, [&] {
                                services.wait_copy(services.from_host_async(dev, host.p, bytes));
                              });
  } catch (...) {
    ops.release(dev);
    throw;
  }
  ops.release(dev);
}

void measure_adamw(Ops& ops, const HostBenchSpec& spec, HostBenchResult& r) {
  const size_t n = spec.elements, bytes = n * sizeof(float);
  DeviceServices& services = ops.services();
  HostBuffer master(services, bytes, false), grad(services, bytes, false),
      m(services, bytes, false), v(services, bytes, false), param(services, bytes, false);
  for (size_t i = 0; i < n; i++) {  // finite, varied values; the rate does not depend on them
    master.f()[i] = 0.01f * static_cast<float>(i % 97);
    grad.f()[i] = 0.001f * static_cast<float>(i % 89) - 0.04f;
  }
  HostAdamW adamw(cpu_threads());
  r.threads = adamw.threads();
  int t = 0;
  const AdamWArgs base{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  r.adamw_elements_per_s = n / median_seconds(spec.reps, [&] {
                             AdamWArgs a = base;
                             a.t = ++t;
                             adamw.step(master.f(), grad.f(), m.f(), v.f(), param.f(), n, a);
                           });
}

void measure_nvme(Ops& ops, const HostBenchSpec& spec, HostBenchResult& r) {
  const size_t bytes = 12 * spec.elements;  // master, m and v of the arrays above
  const size_t chunk = std::min(spec.chunk_bytes, bytes);
  const int slots = std::max(1, spec.in_flight);
  HostBuffer buffers(ops.services(), chunk * slots,
                     false);  // outlives the store, which waits on exit
  char* base = static_cast<char*>(buffers.p);
  OffloadConfig o;
  o.device = "nvme";
  o.nvme_path = spec.nvme_dir;
  std::shared_ptr<NvmeDirectory> dir;
  auto store = make_offload_store(o, "commbench --host-nvme", dir, spec.rank, "host_bench.bin",
                                  bytes, MemCategory::CommBuffers, ops);
  // Every chunk once, `slots` requests in flight, writes or reads.
  auto pass = [&](bool write) {
    std::vector<int> tickets;
    size_t next = 0;
    for (size_t off = 0; off < bytes; off += chunk, next++) {
      char* buf = base + (next % slots) * chunk;
      if (tickets.size() == static_cast<size_t>(slots)) {
        store->wait(tickets.front());
        tickets.erase(tickets.begin());
      }
      const size_t n = std::min(chunk, bytes - off);
      tickets.push_back(write ? store->start_write(off, n, buf) : store->start_read(off, n, buf));
    }
    for (int t : tickets) store->wait(t);
  };
  const double seconds = median_seconds(spec.reps, [&] {
    pass(true);
    pass(false);
  });
  r.nvme_bytes_per_s = 2.0 * bytes / seconds;
}

}  // namespace

HostBenchResult run_host_bench(Ops& ops, const HostBenchSpec& spec) {
  HostBenchResult r;
  measure_copies(ops, spec, r);
  measure_adamw(ops, spec, r);
  if (!spec.nvme_dir.empty()) measure_nvme(ops, spec, r);
  return r;
}

}  // namespace zt
