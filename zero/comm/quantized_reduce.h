// qgZ (zero_quantized_gradients): DeepSpeed's all_to_all_quant_reduce
// (runtime/comm/coalesced_collectives.py, 0.14.4) for one tensor of n
// elements on W = N nodes x L ranks, replacing its reduce-scatter:
//
//   1. quantize the tensor to int4 in `groups` blocks (DeepSpeed's
//      intra_quant_group = max(rows, cols, W)), laid out so that chunk j (of
//      L) holds the partitions of ranks j, L + j, 2L + j, ... (every node's
//      local rank j);
//   2. all-to-all inside the node (codes, then scales): local rank j gets
//      chunk j from each of its L peers; dequantize and sum them in fp32;
//   3. quantize that sum (n / L elements) again, in groups / L blocks;
//   4. all-to-all across the nodes among the ranks of local index j (codes,
//      then scales): node k's part of the sum goes to rank kL + j;
//   5. dequantize and sum the N parts: this rank's partition, n / W elements.
//
// So the inter-node link carries n / (2L) bytes per rank (int4) instead of a
// ring reduce-scatter's share of 2 or 4 bytes per element. Tensors DeepSpeed
// reduce-scatters instead: 1-D ones and those with n not a multiple of 2W;
// zerotrain also where the blocks do not split evenly over the chunks (groups
// % L, (groups / L) % N) or a block is odd (int4 packs pairs), with the
// reduce-scatter DeepSpeed would use there.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "model/ops.h"
#include "zero/comm/communicator.h"

namespace zt {

struct QgzShape {
  size_t n = 0;       // elements of the tensor (a multiple of 2W)
  int local = 1;      // L: ranks per node
  int nodes = 1;      // N
  size_t groups = 0;  // quantization blocks of the whole tensor
  size_t block() const { return n / groups; }
};

// Whether qgZ reduces a tensor of this shape (else a reduce-scatter does),
// and its shape then.
bool qgz_applies(const std::vector<int>& shape, int world, int local, QgzShape* out);

// One of the four all-to-alls: over the node ({L, 1}) or across nodes
// ({N, L}); count per peer as Communicator::all_to_all takes it.
struct QgzCall {
  RankGroup group;
  DType dtype;
  size_t count;
  const char* what;
};
std::vector<QgzCall> qgz_calls(const QgzShape& s);

// Runs the reduction over communicators of the node (L ranks, this rank's
// local index) and across nodes (N ranks, this rank's node).
class QuantizedReducer {
 public:
  QuantizedReducer(Ops& ops, Communicator& node, Communicator& across);
  // in[n] (dtype t, this rank's whole gradient) -> out[n / W] (dtype t): this
  // rank's partition of the sum over all ranks. Blocking.
  void reduce(const void* in, void* out, DType t, const QgzShape& s);
  int local() const { return node_.world(); }

 private:
  Ops& ops_;
  Communicator &node_, &across_;
};

// qgZ's communicators (made collectively from the world) and its reducer.
struct QuantizedReduction {
  std::unique_ptr<Communicator> node, across;
  std::unique_ptr<QuantizedReducer> reducer;
};
QuantizedReduction make_quantized_reduction(Communicator& world, int ranks_per_node, Ops& ops);

}  // namespace zt
