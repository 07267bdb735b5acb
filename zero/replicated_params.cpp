#include "zero/replicated_params.h"

#include <algorithm>
#include <cmath>

#include "zero/bucket_plan.h"

namespace zt {

ReplicatedParams::ReplicatedParams(const ParamTable& table, const Partition& partition, Ops& ops,
                                   Communicator& comm, const ZeroConfig& z)
    : table_(table), partition_(partition), ops_(ops), comm_(comm), bucketed_(z.allgather_bucketed),
      bucket_size_(z.allgather_bucket_size) {
  params_ = ops_.alloc(partition.padded_total() * dtype_size(ops.dtype()), MemCategory::Params);
}

ReplicatedParams::~ReplicatedParams() { ops_.release(params_); }

const void* ReplicatedParams::unit(int u) const {
  return static_cast<const char*>(params_) + table_.units()[u].offset * dtype_size(ops_.dtype());
}

void ReplicatedParams::all_gather_shards() {
  const DType t = ops_.dtype();
  const size_t es = dtype_size(t);
  const int W = comm_.world(), r = comm_.rank();
  char* base = static_cast<char*>(params_);
  for (size_t g = 0; g < partition_.groups().size(); g++) {
    const FlatRange group = partition_.groups()[g];
    const size_t slice = group.size() / W;
    if (!bucketed_) {
      comm_.all_gather(base + (group.begin + r * slice) * es, base + group.begin * es, slice, t)
          ->wait();
      continue;
    }
    // Older DeepSpeed: each call gathers one chunk of every rank's slice, so the
    // result is strided in the flat buffer and lands in a staging buffer first.
    const size_t chunk = std::max<size_t>(1, static_cast<size_t>(bucket_size_) / W);
    void* staging = ops_.alloc(std::min(chunk, slice) * W * es, MemCategory::CommBuffers);
    for (size_t c = 0; c < slice; c += chunk) {
      const size_t n = std::min(chunk, slice - c);
      comm_.all_gather(base + (group.begin + r * slice + c) * es, staging, n, t)->wait();
      for (int q = 0; q < W; q++)
        if (q != r)
          ops_.copy(base + (group.begin + q * slice + c) * es,
                    static_cast<char*>(staging) + q * n * es, n * es);
    }
    ops_.release(staging);
  }
}

void ReplicatedParams::refresh_from(ShardOptimizer& optimizer) {
  optimizer.write_params(params_, Indexing::Flat);
  all_gather_shards();
}

double global_grad_norm(double local_sum_squares, bool all_reduce, Ops& ops, Communicator& comm) {
  if (!all_reduce) return std::sqrt(local_sum_squares);
  float host = static_cast<float>(local_sum_squares);
  float* dev = static_cast<float*>(ops.alloc(sizeof(float), MemCategory::CommBuffers));
  ops.from_host(dev, &host, sizeof(float));
  comm.all_reduce(dev, 1, DType::F32)->wait();
  ops.to_host(&host, dev, sizeof(float));
  ops.release(dev);
  return std::sqrt(static_cast<double>(host));
}

float clip_scale(double norm, double clip) {
  if (clip <= 0 || norm <= clip) return 1.0f;
  return static_cast<float>(clip / (norm + 1e-6));
}

std::vector<float> ZeroEngine::gather_master(Ops& ops, Communicator& comm, size_t total) {
  // Each rank writes its owned pieces into a zeroed padded buffer; one sum
  // all-reduce assembles the whole (every element has exactly one owner).
  const size_t padded = partition().padded_total();
  std::vector<float> master, m, v, full(padded, 0.0f);
  optimizer().save_state(master, m, v);
  for (const OptimPiece& p : optimizer().pieces())
    std::copy(master.begin() + p.shard_offset, master.begin() + p.shard_offset + p.n,
              full.begin() + p.flat_begin);
  if (comm.world() > 1 && partition().world() > 1) {
    float* dev = static_cast<float*>(ops.alloc(padded * sizeof(float), MemCategory::CommBuffers));
    ops.from_host(dev, full.data(), padded * sizeof(float));
    comm.all_reduce(dev, padded, DType::F32)->wait();
    ops.to_host(full.data(), dev, padded * sizeof(float));
    ops.release(dev);
  }
  full.resize(total);
  return full;
}

}  // namespace zt
