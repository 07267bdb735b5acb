// Factories for the communicator implementations, and the counting wrapper.
#pragma once
#include <memory>

#include "zero/comm/communicator.h"

namespace zt {

std::unique_ptr<Communicator> make_single_communicator(Ops& ops);
// MPI_COMM_WORLD. Host buffers are used directly; device buffers (ops.on_device())
// are staged through pinned host memory, bf16 widened to fp32 for the reduction.
std::unique_ptr<Communicator> make_mpi_communicator(Ops& ops);

}  // namespace zt
