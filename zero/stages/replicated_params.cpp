#include "zero/stages/replicated_params.h"

#include <algorithm>
#include <cmath>

namespace zt {

ReplicatedParams::ReplicatedParams(const ParamTable& table, const FlatLayout& layout, Ops& ops,
                                   Communicator& comm)
    : layout_(layout), ops_(ops), comm_(comm) {
  const size_t es = dtype_size(ops.dtype());
  params_ = ops_.alloc(layout.padded_total() * es, MemCategory::Params);
  for (const ModuleInfo& m : table.modules()) {
    module_ptrs_.emplace_back();
    for (int p : m.params)
      module_ptrs_.back().push_back(static_cast<char*>(params_) + layout.offset(p) * es);
  }
}

ReplicatedParams::~ReplicatedParams() { ops_.release(params_); }

void ReplicatedParams::all_gather(const StepCall& c) {
  const DType t = ops_.dtype();
  const size_t es = dtype_size(t);
  const int W = comm_.world(), r = comm_.rank();
  char* base = static_cast<char*>(params_);
  const FlatRange group = layout_.partition().groups()[c.group];
  const size_t slice = group.size() / W;
  comm_.purpose(Purpose::Parameters);
  if (c.offset == 0 && c.count == slice) {
    comm_.all_gather(base + (group.begin + r * slice) * es, base + group.begin * es, slice, t)
        ->wait();
    return;
  }
  // A chunk of every rank's slice: strided in the flat buffer, so it lands in
  // a staging buffer first.
  void* staging = ops_.alloc(std::max<size_t>(1, c.count * W) * es, MemCategory::CommBuffers);
  comm_.all_gather(base + (group.begin + r * slice + c.offset) * es, staging, c.count, t)->wait();
  for (int q = 0; q < W; q++)
    if (q != r)
      ops_.copy(base + (group.begin + q * slice + c.offset) * es,
                static_cast<char*>(staging) + q * c.count * es, c.count * es);
  ops_.release(staging);
}

void ReplicatedParams::refresh_from(ShardOptimizer& optimizer, const std::vector<StepCall>& step) {
  optimizer.write_params(params_, Indexing::Flat);
  for (const StepCall& c : step)
    if (c.kind == StepCall::ParamGather) all_gather(c);
}

double all_reduce_scalar(double x, DType dtype, Ops& ops, Communicator& comm) {
  const size_t es = dtype_size(dtype);
  void* dev = ops.alloc(es, MemCategory::CommBuffers);
  const float f = static_cast<float>(x);
  ops.from_host(dev, dtype == DType::F64 ? static_cast<const void*>(&x) : &f, es);
  comm.purpose(Purpose::Scalars);
  comm.all_reduce(dev, 1, dtype)->wait();
  double d = 0;
  float back = 0;
  ops.to_host(dtype == DType::F64 ? static_cast<void*>(&d) : &back, dev, es);
  ops.release(dev);
  return dtype == DType::F64 ? d : static_cast<double>(back);
}

bool any_rank_overflowed(const std::vector<double>& sums, Ops& ops, Communicator& comm) {
  uint8_t flag = 0;
  for (double x : sums)
    if (!std::isfinite(x)) flag = 1;
  void* dev = ops.alloc(1, MemCategory::CommBuffers);
  ops.from_host(dev, &flag, 1);
  comm.purpose(Purpose::Scalars);
  comm.all_reduce(dev, 1, DType::U8)->wait();
  ops.to_host(&flag, dev, 1);
  ops.release(dev);
  return flag != 0;
}

float clip_scale(double norm, double clip) {
  if (clip <= 0 || norm <= clip) return 1.0f;
  return static_cast<float>(clip / (norm + 1e-6));
}

std::vector<float> ZeroEngine::gather_master(Ops& ops, Communicator& comm, size_t total) {
  // Each rank writes its owned pieces into a zeroed buffer in the model's flat
  // layout; one sum all-reduce assembles the whole (every element has exactly one
  // first owner among its replicas). Stage 0 owns everything already.
  std::vector<float> master, m, v, full(total, 0.0f);
  optimizer().save_state(master, m, v);
  const bool summed = comm.world() > 1 && stage() != 0;
  if (!summed || state_replicas().front() == comm.rank())
    for (const OptimPiece& p : optimizer().pieces())
      std::copy(master.begin() + p.shard_offset, master.begin() + p.shard_offset + p.n,
                full.begin() + p.flat_begin);
  if (summed) {
    float* dev = static_cast<float*>(ops.alloc(total * sizeof(float), MemCategory::CommBuffers));
    ops.from_host(dev, full.data(), total * sizeof(float));
    comm.purpose(Purpose::Parameters);
    comm.all_reduce(dev, total, DType::F32)->wait();
    ops.to_host(full.data(), dev, total * sizeof(float));
    ops.release(dev);
  }
  return full;
}

}  // namespace zt
