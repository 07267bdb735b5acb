// Builds without nvcc: the NCCL communicator reports itself unavailable.
#ifndef ZT_HAVE_CUDA
#include <stdexcept>

#include "zero/comm/nccl_factory.h"

namespace zt {

std::unique_ptr<Communicator> make_nccl_communicator(Ops&) {
  throw std::runtime_error(
      "system.communicator: nccl requested, but zerotrain was built without CUDA");
}

}  // namespace zt
#endif
