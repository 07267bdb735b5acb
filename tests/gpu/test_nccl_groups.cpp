// The NCCL communicator's grouped point-to-point calls (a pipeline's messages)
// at W = 1, where a rank sends to itself: a 16 MB message in a group with its
// own receive arrives whole (alone, the send would wait for a receive queued
// behind it); a grouped handle cannot be waited on before group_end (its event
// is recorded there); a handle from before the group can. Several ranks need a
// GPU each, which one card cannot give: tests/mpi/test_pipeline_parallel.cpp
// checks the pipeline's postings under NCCL's rules on the CPU. Without a GPU
// the test prints one SKIPPED line and passes.
#include <mpi.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/ops.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "zero/comm/nccl_factory.h"

namespace zt {

TEST_CASE("NCCL's grouped send and receive: a rank's message to itself arrives whole", "[gpu]") {
  SKIP_WITHOUT_GPU();
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W != 1) return;
  auto gpu = make_cuda_ops(0);
  auto nccl = make_nccl_communicator(*gpu);
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const size_t n = (size_t(1) << 22) + 13;  // 16 MB of fp32, above NCCL's buffers
  std::vector<float> values(n);
  for (float& x : values) x = d(rng);
  void* from = gpu->alloc(n * 4, MemCategory::Activations);
  void* to = gpu->alloc(n * 4, MemCategory::Activations);
  gpu->from_host(from, values.data(), n * 4);

  for (int round = 0; round < 2; round++) {
    CAPTURE(round);
    gpu->memzero(to, n * 4);
    Handle before = nccl->all_reduce(from, 16, DType::F32);  // ungrouped; W = 1 sums to itself
    nccl->group_begin();
    Handle sent = nccl->send(from, n, DType::F32, 0, 0);
    Handle received = nccl->recv(to, n, DType::F32, 0, 0);
    CHECK_THROWS_AS(received->wait(), std::logic_error);
    CHECK_FALSE(sent->done());
    before->wait();
    nccl->group_end();
    received->wait();
    sent->wait();
    std::vector<float> back(n);
    gpu->to_host(back.data(), to, n * 4);
    CHECK(std::memcmp(back.data(), values.data(), n * 4) == 0);
    CHECK(received->done());
  }
  gpu->release(from);
  gpu->release(to);
}

}  // namespace zt
