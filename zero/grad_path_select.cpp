// Chooses the gradient path from the DeepSpeed-named switches.
#include "zero/grad_path.h"

namespace zt {

std::unique_ptr<GradPath> make_grad_path(const ZeroConfig& z, const Partition& partition,
                                         Communicator& comm) {
  if (z.native_reduce_scatter) return make_reduce_scatter_path(partition, comm);
  if (!z.contiguous_gradients) return make_allreduce_fallback_path(comm);
  if (!z.reduce_scatter) return make_allreduce_path(comm);
  if (z.use_multi_rank_bucket_allreduce)
    return make_multi_rank_allreduce_path(partition, comm, z.reduce_bucket_size);
  return make_per_owner_reduce_path(partition, comm, z.reduce_bucket_size);
}

}  // namespace zt
