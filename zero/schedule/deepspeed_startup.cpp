#include "zero/schedule/deepspeed_startup.h"

#include "zero/layout/mics_groups.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

void broadcast_every_param(const ParamTable& table, DType wire, DType model,
                           const std::string& what, std::vector<StartupCall>& out) {
  const size_t per_element = wire == DType::U8 ? dtype_size(model) : 1;
  for (size_t p = 0; p < table.params().size(); p++) {
    const ParamInfo& info = table.params()[p];
    out.push_back({StartupCall::Broadcast, static_cast<int>(p), wire, info.numel * per_element,
                   what + " " + info.name});
  }
}

}  // namespace

std::vector<StartupCall> deepspeed_startup_calls(const ZeroSetup& s, const ParamTable& table,
                                                 int world, DType model) {
  const DeepSpeedBehaviours b = deepspeed_behaviours(s.z.deepspeed_version);
  const DType wire = b.startup_broadcast_as_bytes ? DType::U8 : model;
  std::vector<StartupCall> out;
  broadcast_every_param(table, wire, model, "deepspeed start-up parameter broadcast", out);
  auto barrier = [&](const std::string& what) {
    out.push_back({StartupCall::Barrier, -1, model, 0, what});
  };
  if (s.z.stage == 3) {
    broadcast_every_param(table, wire, model, "stage-3 zero.Init parameter broadcast", out);
    const int S = shard_ranks(s.z, world);
    const RankGroup over = S == world ? RankGroup{0, 1} : RankGroup{S, 1};
    for (const ParamGroup& g : s.groups)
      for (int p : g.params) {
        const ParamInfo& info = table.params()[p];
        out.push_back({StartupCall::AllGather, p, model, (info.numel + S - 1) / S,
                       "stage-3 optimizer start-up gather " + info.name, over});
      }
    barrier("stage-3 optimizer start-up barrier (partitions defragmented)");
    barrier("stage-3 optimizer start-up barrier (before the real optimizer)");
    barrier("stage-3 optimizer start-up barrier (after the real optimizer)");
  } else if ((s.z.stage == 1 || s.z.stage == 2) && b.stage12_startup_barrier) {
    barrier("deepspeed stage 1/2 optimizer construction barrier");
  }
  return out;
}

}  // namespace zt
