#include "zero/layout/param_groups.h"

#include <stdexcept>

namespace zt {

std::vector<ParamGroup> make_param_groups(const ParamTable& table, const std::string& mode) {
  const int n = static_cast<int>(table.params().size());
  if (mode == "one") {
    ParamGroup all;
    for (int p = 0; p < n; p++) all.params.push_back(p);
    return {all};
  }
  if (mode != "two") throw std::logic_error("param groups: unknown mode '" + mode + "'");
  ParamGroup decay, no_decay;
  no_decay.decay = false;
  for (int p = 0; p < n; p++) (table.params()[p].decay ? decay : no_decay).params.push_back(p);
  std::vector<ParamGroup> out;
  for (ParamGroup* g : {&decay, &no_decay})
    if (!g->params.empty()) out.push_back(*g);
  return out;
}

}  // namespace zt
