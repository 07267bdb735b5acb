// The parallel grid (DESIGN.md, "The parallel grid"): W = data x tensor x
// pipeline ranks, and where each rank sits in it; the one definition of the
// rank order that the trainer, `plan` and the closed forms
// (zero/analysis/grid_volume.h) share. The pipeline is outermost. Tensor-
// innermost order (Megatron's default) makes rank = t + T·(d + D·p): a tensor
// group is T consecutive ranks, inside a node when a node's ranks are a
// multiple of T. Data-innermost makes rank = d + D·(t + T·p).
#pragma once
#include "zero/comm/communicator.h"

namespace zt {

enum class RankOrder { TensorInnermost, DataInnermost };

struct Grid {
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
  RankOrder order = RankOrder::TensorInnermost;

  int world() const { return data * tensor * pipeline; }
  bool tensor_inner() const { return order == RankOrder::TensorInnermost; }
  // The ranks of one tensor group, one data-parallel group (ZeRO's) and one
  // pipeline (its stages).
  RankGroup tensor_group() const { return {tensor, tensor_inner() ? 1 : data}; }
  RankGroup data_group() const { return {data, tensor_inner() ? tensor : 1}; }
  RankGroup pipeline_group() const { return {pipeline, data * tensor}; }
  int tensor_index(int rank) const { return tensor_group().index_of(rank); }
  int data_index(int rank) const { return data_group().index_of(rank); }
  int pipeline_index(int rank) const { return pipeline_group().index_of(rank); }
};

}  // namespace zt
