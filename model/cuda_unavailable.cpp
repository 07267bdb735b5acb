// Builds without nvcc: the CUDA backend reports itself unavailable.
#ifndef ZT_HAVE_CUDA
#include <stdexcept>

#include "model/ops.h"

namespace zt {

bool cuda_available(std::string* why_not) {
  if (why_not) *why_not = "zerotrain was built without CUDA (no nvcc at build time)";
  return false;
}

std::unique_ptr<Ops> make_cuda_ops(int) {
  throw std::runtime_error("system.device: cuda requested, but zerotrain was built without CUDA");
}

}  // namespace zt
#endif
