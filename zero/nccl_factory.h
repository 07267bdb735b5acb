// The NCCL communicator, where zerotrain was built with CUDA (zero/nccl_communicator.cu);
// elsewhere a one-line error.
#pragma once
#include <memory>

#include "zero/communicator.h"

namespace zt {

std::unique_ptr<Communicator> make_nccl_communicator(Ops& ops);

}  // namespace zt
