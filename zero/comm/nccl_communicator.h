// The NCCL communicator: collectives on device buffers of the CUDA backend, on a
// dedicated communication stream, bootstrapped over MPI. Built only with nvcc
// (zero/comm/nccl_communicator.cu); zero/comm/nccl_factory.h is the build-independent entry.
//
// Stream semantics: a call first makes the communication stream wait for the
// work already queued on the compute stream (so it sees finished gradients),
// then queues the collective. The handle's wait() makes the COMPUTE stream wait
// for the collective (no host block: later ops, and host copies made through the
// Ops, are ordered after it); done() tells whether it has finished on the GPU.
#pragma once
#include <mpi.h>

#include <memory>
#include <stdexcept>

#include "zero/comm/communicator.h"

namespace zt {

// One rank per GPU over the ranks of `comm`; `ops` must be the CUDA backend.
// Throws std::runtime_error (on every rank alike) when two ranks share a GPU.
std::unique_ptr<Communicator> make_nccl_communicator(Ops& ops, MPI_Comm comm);

}  // namespace zt
