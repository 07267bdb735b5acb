// Plain C++ view of the CUDA backend's stream, for code that must not include
// CUDA headers (the NCCL communicator). Defined
// in model/cuda/cuda_ops.cu, so only available in builds with nvcc (ZT_HAVE_CUDA).
#pragma once
#include "model/ops.h"

namespace zt {

// The cudaStream_t, as void*, on which a CUDA Ops enqueues all of its work.
// Throws std::runtime_error when `ops` is not the CUDA backend.
void* cuda_compute_stream(Ops& ops);

}  // namespace zt
