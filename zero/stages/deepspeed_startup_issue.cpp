// The start-up calls of deepspeed_startup.h, issued for real: the values move
// from rank 0 and the ranks' pieces are gathered, as DeepSpeed's do.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/host_floats.h"
#include "zero/schedule/deepspeed_startup.h"

namespace zt {
namespace {

// The tensor's values as the model holds them: fp32, or bf16 on the GPU.
std::vector<uint8_t> model_bytes(const float* values, size_t n, DType model) {
  std::vector<uint8_t> bytes(n * dtype_size(model));
  if (model == DType::BF16) {
    for (size_t i = 0; i < n; i++) {
      const uint16_t b = float_to_bf16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    }
  } else {
    std::memcpy(bytes.data(), values, bytes.size());
  }
  return bytes;
}

void to_floats(const std::vector<uint8_t>& bytes, DType model, float* values, size_t n) {
  if (model == DType::BF16) {
    for (size_t i = 0; i < n; i++) {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      values[i] = bf16_to_float(b);
    }
  } else {
    std::memcpy(values, bytes.data(), n * sizeof(float));
  }
}

}  // namespace

void issue_startup_calls(const std::vector<StartupCall>& calls, const ParamTable& table,
                         DType model, Ops& ops, Communicator& comm, float* weights) {
  if (model != DType::F32 && model != DType::BF16)
    throw std::invalid_argument(std::string("start-up broadcast: model dtype ") +
                                dtype_name(model) + ", expected fp32 or bf16");
  comm.annotate(Phase::Init, 0);
  comm.purpose(Purpose::Parameters);
  // A call over a group (MiCS's shard group) runs on a sub-communicator, made
  // once per group; every rank reaches each in the same order of the calls.
  std::map<std::pair<int, int>, std::unique_ptr<Communicator>> subgroups;
  auto over = [&](const RankGroup& g) -> Communicator& {
    if (g.size == 0) return comm;
    std::unique_ptr<Communicator>& sub = subgroups[{g.size, g.stride}];
    if (!sub) sub = comm.subgroup(g.members_of(comm.rank()));
    return *sub;
  };
  for (const StartupCall& c : calls) {
    if (c.kind == StartupCall::Barrier) {
      comm.barrier();
      continue;
    }
    const ParamInfo& info = table.params()[c.param];
    float* values = weights + info.offset;
    std::vector<uint8_t> host = model_bytes(values, info.numel, model);
    const size_t es = dtype_size(model);
    if (c.kind == StartupCall::Broadcast) {
      void* dev = ops.alloc(host.size(), MemCategory::CommBuffers);
      ops.from_host(dev, host.data(), host.size());
      comm.broadcast(dev, c.count, c.dtype, 0)->wait();
      ops.to_host(host.data(), dev, host.size());
      ops.release(dev);
      to_floats(host, model, values, info.numel);
    } else {
      // This rank's piece, padded with zeros past the tensor's end.
      Communicator& group = over(c.group);
      const size_t W = static_cast<size_t>(group.world());
      std::vector<uint8_t> piece(c.count * es, 0);
      const size_t first = static_cast<size_t>(group.rank()) * c.count;
      if (first < info.numel)
        std::memcpy(piece.data(), host.data() + first * es,
                    (std::min(info.numel, first + c.count) - first) * es);
      void* send = ops.alloc(piece.size(), MemCategory::CommBuffers);
      void* recv = ops.alloc(piece.size() * W, MemCategory::CommBuffers);
      ops.from_host(send, piece.data(), piece.size());
      group.all_gather(send, recv, c.count, c.dtype)->wait();
      ops.release(send);
      ops.release(recv);
    }
  }
}

}  // namespace zt
