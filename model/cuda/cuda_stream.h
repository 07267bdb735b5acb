// Plain C++ view of the CUDA backend's device and stream, for code that must not
// include CUDA headers (the NCCL communicator's users, the benchmark). Defined
// in model/cuda/cuda_ops.cu, so only available in builds with nvcc (ZT_HAVE_CUDA).
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

#include "model/ops.h"

namespace zt {

// The cudaStream_t, as void*, on which a CUDA Ops enqueues all of its work.
// Throws std::runtime_error when `ops` is not the CUDA backend.
void* cuda_compute_stream(Ops& ops);

// Name, multiprocessor count and memory size of the current device; false (and
// nothing written) when no CUDA device is usable.
bool cuda_device_info(std::string* name, int* sms, size_t* total_mem);

// Bytes of device memory in use on the current device right now (total minus
// free, as cudaMemGetInfo reports it: every process and the CUDA context count).
size_t cuda_device_memory_used();

}  // namespace zt
