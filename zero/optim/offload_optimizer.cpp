#include "zero/optim/offload_optimizer.h"

#include <algorithm>
#include <deque>
#include <vector>

namespace zt {

OptimizerOffloadPlan plan_optimizer_offload(const ZeroConfig& z, size_t shard, DType model) {
  OptimizerOffloadPlan p;
  const OffloadConfig& o = z.offload_optimizer;
  p.device = o.device;
  p.shard = shard;
  if (!o.enabled()) {
    p.device_bytes = 12 * static_cast<uint64_t>(shard);
    return p;
  }
  p.chunk = std::max<size_t>(
      1, std::min({shard, static_cast<size_t>(std::max<int64_t>(1, z.sub_group_size)),
                   kOffloadMaxChunk}));
  p.chunks = (shard + p.chunk - 1) / p.chunk;
  const size_t es = dtype_size(model);
  p.host_grad_bytes = es * static_cast<uint64_t>(shard);
  p.host_staging_bytes = (8 + (es == 4 ? 0 : 2 * es)) * static_cast<uint64_t>(p.chunk);
  if (o.device == "cpu") {
    p.host_state_bytes = 12 * static_cast<uint64_t>(shard);
  } else {
    p.buffers = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>(o.buffer_count, static_cast<int64_t>(p.chunks))));
    p.host_buffer_bytes = 12 * static_cast<uint64_t>(p.chunk) * p.buffers;
    p.nvme_bytes = 12 * static_cast<uint64_t>(shard);
  }
  return p;
}

OffloadedOptimizerState::OffloadedOptimizerState(const OptimizerOffloadPlan& plan,
                                                 const OffloadConfig& o, int rank, Ops& ops)
    : plan_(plan), services_(ops.services()) {
  const bool pinned = o.pin_memory && ops.on_device();
  static const char* names[] = {"fp32_master.bin", "exp_avg.bin", "exp_avg_sq.bin"};
  for (int a = 0; a < 3; a++)
    store_[a] = make_offload_store(o, "zero.offload_optimizer", dir_, rank, names[a],
                                   plan.shard * sizeof(float), MemCategory::Optimizer, ops);
  for (int b = 0; b < 3 * plan.buffers; b++)
    slots_.push_back(static_cast<float*>(
        services_.alloc_host(plan.chunk * sizeof(float), MemCategory::Optimizer, pinned)));
  const size_t es = dtype_size(ops.dtype());
  host_grads_ =
      static_cast<char*>(services_.alloc_host(plan.shard * es, MemCategory::Optimizer, pinned));
  for (char*& u : upload_)
    u = static_cast<char*>(services_.alloc_host(plan.chunk * es, MemCategory::Optimizer, pinned));
  if (es == 4) return;
  grad32_ =
      static_cast<float*>(services_.alloc_host(plan.chunk * 4, MemCategory::Optimizer, false));
  param32_ =
      static_cast<float*>(services_.alloc_host(plan.chunk * 4, MemCategory::Optimizer, false));
}

OffloadedOptimizerState::~OffloadedOptimizerState() {
  for (float* s : slots_) services_.release_host(s);
  services_.release_host(host_grads_);
  for (char* u : upload_) services_.release_host(u);
  services_.release_host(grad32_);
  services_.release_host(param32_);
}

void OffloadedOptimizerState::for_each_chunk(unsigned read, unsigned write, const ChunkFn& fn) {
  const size_t C = plan_.chunk, N = plan_.shard;
  auto extent = [&](size_t c) { return std::min(C, N - c * C); };
  if (store_[0]->host_data()) {  // host memory: the chunks are views
    float* arr[3];
    for (int a = 0; a < 3; a++) arr[a] = reinterpret_cast<float*>(store_[a]->host_data());
    for (size_t c = 0; c < plan_.chunks; c++)
      fn(c * C, extent(c), arr[0] + c * C, arr[1] + c * C, arr[2] + c * C);
    return;
  }
  // Files: a slot holds one chunk of each array; a chunk's slot is free again
  // once its writes are done. Reads are issued as far ahead as slots allow, and
  // one chunk's writes stay in flight while the next chunk computes.
  struct Inflight {
    size_t chunk;
    int slot;
    int tickets[3];
  };
  std::deque<int> free_slots;
  for (int s = 0; s < plan_.buffers; s++) free_slots.push_back(s);
  std::deque<Inflight> reads, writes;
  size_t next_read = 0;
  auto slot_array = [&](int slot, int a) { return slots_[3 * slot + a]; };
  auto issue_reads = [&] {
    while (!free_slots.empty() && next_read < plan_.chunks) {
      Inflight f{next_read, free_slots.front(), {-1, -1, -1}};
      free_slots.pop_front();
      for (int a = 0; a < 3; a++)
        if (read & (1u << a))
          f.tickets[a] =
              store_[a]->start_read(f.chunk * C * 4, extent(f.chunk) * 4, slot_array(f.slot, a));
      reads.push_back(f);
      next_read++;
    }
  };
  auto complete = [&](std::deque<Inflight>& q) {
    Inflight f = q.front();
    q.pop_front();
    for (int a = 0; a < 3; a++)
      if (f.tickets[a] >= 0) store_[a]->wait(f.tickets[a]);
    return f;
  };
  try {
    issue_reads();
    for (size_t c = 0; c < plan_.chunks; c++) {
      if (reads.empty()) {  // every slot is still being written (one buffer)
        free_slots.push_back(complete(writes).slot);
        issue_reads();
      }
      Inflight f = complete(reads);
      fn(c * C, extent(c), slot_array(f.slot, 0), slot_array(f.slot, 1), slot_array(f.slot, 2));
      Inflight w{c, f.slot, {-1, -1, -1}};
      for (int a = 0; a < 3; a++)
        if (write & (1u << a))
          w.tickets[a] = store_[a]->start_write(c * C * 4, extent(c) * 4, slot_array(f.slot, a));
      writes.push_back(w);
      while (writes.size() > 1) free_slots.push_back(complete(writes).slot);
      issue_reads();
    }
    while (!writes.empty()) complete(writes);
  } catch (...) {
    // Leave no request in flight on buffers that outlive this call.
    for (auto* q : {&reads, &writes})
      for (const Inflight& f : *q)
        for (int a = 0; a < 3; a++)
          if (f.tickets[a] >= 0) {
            try {
              store_[a]->wait(f.tickets[a]);
            } catch (...) {
            }
          }
    throw;
  }
}

}  // namespace zt
