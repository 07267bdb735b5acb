// zero.offload_optimizer (DeepSpeed's ZeRO-Offload, and ZeRO-Infinity's NVMe
// tier): where one rank's fp32 master weights, Adam m and v live when they are
// not in device memory, and the chunk-by-chunk streaming the optimizer steps
// through. The placement is one function, so `plan` prints what a run allocates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/device_services.h"
#include "model/ops.h"
#include "zero/optim/offload_store.h"
#include "zero/zero_config.h"

namespace zt {

// Elements per chunk at most: 16 MiB per fp32 array, the staging unit.
constexpr size_t kOffloadMaxChunk = size_t(1) << 22;

struct OptimizerOffloadPlan {
  std::string device = "none";  // none | cpu | nvme
  size_t shard = 0;             // elements of master (and of m, of v)
  // The streaming unit: min(shard, zero.sub_group_size, kOffloadMaxChunk),
  // DeepSpeed's sub-group, in `chunks` chunks.
  size_t chunk = 0, chunks = 0;
  int buffers = 0;            // nvme: chunk buffers of master, m and v (min(buffer_count, chunks))
  uint64_t device_bytes = 0;  // optimizer state in device memory: 12 * shard unless offloaded
  uint64_t host_state_bytes = 0;   // cpu: 12 * shard
  uint64_t host_buffer_bytes = 0;  // nvme: 12 * chunk * buffers
  // The shard's gradients in the model dtype, es * shard: the copies' target
  // during backward.
  uint64_t host_grad_bytes = 0;
  // Two upload chunks of es * chunk (one goes up while the next computes) and,
  // on bf16 models, the fp32 chunks the host AdamW reads and writes: 8 * chunk
  // when es = 4, (8 + 2 * es) * chunk otherwise.
  uint64_t host_staging_bytes = 0;
  uint64_t nvme_bytes = 0;  // nvme: 12 * shard in three files
  uint64_t host_bytes() const {
    return host_state_bytes + host_buffer_bytes + host_grad_bytes + host_staging_bytes;
  }
};
OptimizerOffloadPlan plan_optimizer_offload(const ZeroConfig& z, size_t shard, DType model);

class OffloadedOptimizerState {
 public:
  enum Array : unsigned { kMaster = 1, kM = 2, kV = 4, kAll = 7 };
  OffloadedOptimizerState(const OptimizerOffloadPlan& plan, const OffloadConfig& o, int rank,
                          Ops& ops);
  ~OffloadedOptimizerState();
  OffloadedOptimizerState(const OffloadedOptimizerState&) = delete;
  OffloadedOptimizerState& operator=(const OffloadedOptimizerState&) = delete;

  using ChunkFn = std::function<void(size_t begin, size_t n, float* master, float* m, float* v)>;
  // fn on every chunk in shard order with the arrays in `read` loaded; those in
  // `write` are stored back after it. Files: `buffers` chunks in flight, the
  // next chunks read and the last one written while fn runs on this one.
  void for_each_chunk(unsigned read, unsigned write, const ChunkFn& fn);

  const OptimizerOffloadPlan& plan() const { return plan_; }
  // Staging: the shard's gradients (model dtype); per chunk, fp32 gradients and
  // parameters for the host AdamW (null on fp32 models, which use the others
  // directly), and two model-dtype upload buffers.
  char* host_grads() { return host_grads_; }
  float* grad32() { return grad32_; }
  float* param32() { return param32_; }
  char* upload(int b) { return upload_[b]; }

 private:
  OptimizerOffloadPlan plan_;
  DeviceServices& services_;
  std::shared_ptr<NvmeDirectory> dir_;
  std::unique_ptr<OffloadStore> store_[3];  // master, m, v
  std::vector<float*> slots_;               // nvme: buffers x {master, m, v}, chunk each
  char* host_grads_ = nullptr;
  float *grad32_ = nullptr, *param32_ = nullptr;
  char* upload_[2] = {nullptr, nullptr};
};

}  // namespace zt
