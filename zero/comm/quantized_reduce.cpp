#include "zero/comm/quantized_reduce.h"

#include <algorithm>
#include <stdexcept>

#include "model/device_services.h"

namespace zt {

bool qgz_applies(const std::vector<int>& shape, int world, int local, QgzShape* out) {
  if (shape.size() != 2 || local < 1 || world % local != 0 || world / local < 2) return false;
  QgzShape s;
  s.n = static_cast<size_t>(shape[0]) * shape[1];
  s.local = local;
  s.nodes = world / local;
  s.groups = static_cast<size_t>(std::max({shape[0], shape[1], world}));
  if (s.n % (2 * static_cast<size_t>(world)) != 0 || s.n % s.groups != 0) return false;
  if (s.groups % local != 0 || (s.groups / local) % s.nodes != 0 || s.block() % 2 != 0)
    return false;
  *out = s;
  return true;
}

std::vector<QgzCall> qgz_calls(const QgzShape& s) {
  const RankGroup node{s.local, 1}, across{s.nodes, s.local};
  const size_t L = s.local, N = s.nodes;
  return {
      {node, DType::I8, s.n / 2 / L, "qgZ int4 codes in the node"},
      {node, DType::F32, s.groups / L, "qgZ scales in the node"},
      {across, DType::I8, s.n / 2 / L / N, "qgZ int4 codes across nodes"},
      {across, DType::F32, s.groups / L / N, "qgZ scales across nodes"},
  };
}

QuantizedReduction make_quantized_reduction(Communicator& world, int L, Ops& ops) {
  QuantizedReduction q;
  const int W = world.world();
  q.node = world.subgroup(RankGroup{L, 1}.members_of(world.rank()));
  q.across = world.subgroup(RankGroup{W / L, L}.members_of(world.rank()));
  q.reducer.reset(new QuantizedReducer(ops, *q.node, *q.across));
  return q;
}

QuantizedReducer::QuantizedReducer(Ops& ops, Communicator& node, Communicator& across)
    : ops_(ops), node_(node), across_(across) {}

void QuantizedReducer::reduce(const void* in, void* out, DType t, const QgzShape& s) {
  const size_t L = s.local, N = s.nodes, W = L * N, es = dtype_size(t);
  const size_t part = s.n / W, chunk = s.n / L, block = s.block();
  if (node_.world() != s.local || across_.world() != s.nodes)
    throw std::logic_error("qgZ: communicators of " + std::to_string(node_.world()) + " and " +
                           std::to_string(across_.world()) + " ranks for " +
                           std::to_string(s.local) + " x " + std::to_string(s.nodes));
  auto alloc = [&](size_t bytes) {
    return ops_.alloc(std::max<size_t>(1, bytes), MemCategory::CommBuffers);
  };
  void* swizzled = alloc(s.n * es);
  void *codes = alloc(s.n / 2), *codes_in = alloc(s.n / 2);
  float* scales = static_cast<float*>(alloc(s.groups * sizeof(float)));
  float* scales_in = static_cast<float*>(alloc(s.groups * sizeof(float)));
  float* sum = static_cast<float*>(alloc(chunk * sizeof(float)));
  // Chunk j: the partitions of ranks j, L + j, ... in node order.
  for (size_t j = 0; j < L; j++)
    for (size_t k = 0; k < N; k++)
      ops_.copy(static_cast<char*>(swizzled) + (j * N + k) * part * es,
                static_cast<const char*>(in) + (k * L + j) * part * es, part * es);
  ops_.services().quantize_blocks(codes, scales, swizzled, t, s.n, block, 4);
  const std::vector<QgzCall> calls = qgz_calls(s);
  // One level: codes and scales exchanged over `comm` (calls[first], then
  // first + 1), then the `parts` received parts of `len` elements summed in fp32.
  auto exchange_and_sum = [&](Communicator& comm, size_t first, size_t parts, size_t len) {
    comm.all_to_all(codes, codes_in, calls[first].count, DType::I8)->wait();
    comm.all_to_all(scales, scales_in, calls[first + 1].count, DType::F32)->wait();
    ops_.memzero(sum, len * sizeof(float));
    for (size_t j = 0; j < parts; j++)
      ops_.services().dequantize_blocks(sum, DType::F32,
                                        static_cast<const char*>(codes_in) + j * len / 2,
                                        scales_in + j * (len / block), len, block, 4, true);
  };
  exchange_and_sum(node_, 0, L, chunk);
  ops_.services().quantize_blocks(codes, scales, sum, DType::F32, chunk, block, 4);
  exchange_and_sum(across_, 2, N, part);
  if (t == DType::F32) ops_.copy(out, sum, part * es);
  else ops_.services().convert(out, t, sum, DType::F32, part);
  for (void* b : {swizzled, codes, codes_in, static_cast<void*>(scales),
                  static_cast<void*>(scales_in), static_cast<void*>(sum)})
    ops_.release(b);
}

}  // namespace zt
