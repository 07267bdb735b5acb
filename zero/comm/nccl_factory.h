// The NCCL communicator, where zerotrain was built with CUDA (zero/comm/nccl_communicator.cu);
// elsewhere a one-line error.
#pragma once
#include <memory>

#include "zero/comm/communicator.h"

namespace zt {

std::unique_ptr<Communicator> make_nccl_communicator(Ops& ops);

}  // namespace zt
