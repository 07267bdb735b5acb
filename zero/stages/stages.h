// One factory per stage; make_zero_engine picks by zero.stage.
#pragma once
#include "zero/stages/engine.h"

namespace zt {

std::unique_ptr<ZeroEngine> make_stage0(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage1(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage2(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm);
std::unique_ptr<ZeroEngine> make_stage3(const ZeroSetup& s, const ParamTable& t, Ops& ops,
                                        Communicator& comm);

}  // namespace zt
