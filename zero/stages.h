// One factory per stage; make_zero_engine picks by zero.stage.
#pragma once
#include "zero/engine.h"

namespace zt {

std::unique_ptr<ZeroEngine> make_stage0(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage1(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage2(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage3(const ZeroConfig& z, const ParamTable& table, Ops& ops,
                                        Communicator& comm);

// The partition stages 1/2 use: contiguous ranges (DeepSpeed), or one group per
// aligned bucket when the true reduce-scatter path is selected.
Partition stage12_partition(const ZeroConfig& z, const ParamTable& table, int world);
// The gradient buckets stages 1/2 reduce, in backward order.
std::vector<FlatRange> stage12_buckets(const ZeroConfig& z, const ParamTable& table,
                                       const Partition& partition);

}  // namespace zt
