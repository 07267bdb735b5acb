// What every launcher of the CUDA backend needs: the device, its size, the one
// compute stream, and a growable scratch buffer for per-op temporaries
// (reduction partials, sort buffers). All work is ordered on that stream, so one
// scratch buffer can serve every op in turn.
#pragma once
#include <cstddef>

#include "model/cuda/cuda_common.cuh"
#include "model/memory_ledger.h"

namespace zt {

// Device scratch that only grows. Growing waits for the stream (the old buffer
// may still be in use by queued kernels), so it happens a few times at start-up
// and then never again. Counted in the ledger as activations.
class DeviceScratch {
 public:
  explicit DeviceScratch(MemoryLedger* ledger) : ledger_(ledger) {}
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    if (ptr_) {
      ledger_->on_free(ptr_);
      cudaFree(ptr_);
    }
  }

  void* get(size_t bytes, cudaStream_t stream) {
    if (bytes <= size_) return ptr_;
    size_t grown = bytes + bytes / 4;  // headroom: shapes vary a little between ops
    grown = (grown + 255) / 256 * 256;
    if (ptr_) {
      CUDA_CHECK(cudaStreamSynchronize(stream));
      ledger_->on_free(ptr_);
      CUDA_CHECK(cudaFree(ptr_));
      ptr_ = nullptr;
      size_ = 0;
    }
    CUDA_CHECK(cudaMalloc(&ptr_, grown));
    size_ = grown;
    ledger_->on_alloc(ptr_, size_, MemCategory::Activations);
    return ptr_;
  }

 private:
  MemoryLedger* ledger_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct CudaContext {
  int device = 0;
  int num_sms = 1;
  size_t max_smem_per_block = 48 * 1024;  // opt-in limit for dynamic shared memory
  cudaStream_t stream = nullptr;
  DeviceScratch* scratch = nullptr;
};

}  // namespace zt
