// What a backend offers beside the model's ops, for the work ZeRO does around
// the forward and backward: host memory (ZeRO-Offload's optimizer state and
// staging), asynchronous copies between backend and host memory, gradient
// buffers converted to and from the wire dtype and accumulated, and block
// quantization (ZeRO++'s qwZ and qgZ). The model's forward and backward use
// none of them; a backend hands them out through Ops::services().
// All pointers live in the backend's memory space (host or device) unless the
// comment says host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "model/memory_ledger.h"
#include "model/ops.h"

namespace zt {

class DeviceServices {
 public:
  virtual ~DeviceServices() = default;

  // ---- host memory ----
  // Page-locked when `pinned` and the backend has a device to copy from (CUDA),
  // returned zeroed and counted in host_ledger() by category; Ops::to_host and
  // Ops::from_host accept it.
  virtual void* alloc_host(size_t bytes, MemCategory cat, bool pinned) = 0;
  virtual void release_host(void* p) = 0;
  MemoryLedger& host_ledger() { return host_ledger_; }

  // ---- asynchronous copies between backend memory and host memory ----
  // (ZeRO-Offload's gradients out during backward, parameters back during the
  // host AdamW.) Each starts after all work issued before it and returns a
  // ticket (from 1) at once; copies complete in issue order; wait_copy(t)
  // returns when every copy up to t is done. Until then neither side of a copy
  // may be touched. CUDA runs them on a copy stream beside the compute stream
  // (they overlap only with pinned host memory); the CPU backend runs them at
  // the wait, the latest moment this contract allows, so code that reads or
  // reuses a buffer too early fails the CPU tests.
  virtual uint64_t to_host_async(void* host_dst, const void* src, size_t bytes) = 0;
  virtual uint64_t from_host_async(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void wait_copy(uint64_t ticket) = 0;

  // ---- gradient buffers ----
  // dst (dst_t) <- src (src_t), rounding to nearest even; among F32, BF16, F16
  // (a gradient bucket to and from zero.communication_data_type).
  virtual void convert(void* dst, DType dst_t, const void* src, DType src_t, size_t n) = 0;
  // dst += src, both in the backend's model dtype.
  virtual void add_inplace(void* dst, const void* src, size_t n) = 0;

  // ---- blockwise symmetric quantization (ZeRO++'s qwZ and qgZ) ----
  // x[n] (xt: F32, BF16 or F16) in blocks of `block` elements, the last one
  // possibly shorter. Per block: scale = max|x| / qmax (qmax 127 for 8 bits, 7
  // for 4; 0 for an all-zero block) and q = clamp(rint(x / scale), -qmax, qmax),
  // rint rounding half to even. 8 bits: one int8 per element; 4 bits: two per
  // byte, element 2i in the low nibble (two's complement), n even.
  // scales: fp32[ceil(n / block)].
  virtual void quantize_blocks(void* q, float* scales, const void* x, DType xt, size_t n,
                               size_t block, int bits) = 0;
  // out[n] (ot) = q * scale of its block, rounded to ot; with accumulate,
  // out += that (the sum taken in fp32, then rounded to ot).
  virtual void dequantize_blocks(void* out, DType ot, const void* q, const float* scales, size_t n,
                                 size_t block, int bits, bool accumulate) = 0;

 private:
  MemoryLedger host_ledger_;
};

}  // namespace zt
