#include "zero/schedule/stage3_hook_order.h"

#include <algorithm>

namespace zt {

std::vector<int> stage3_hook_order(const std::vector<int>& ready_order, const ParamTable& table,
                                   bool weight_first) {
  std::vector<int> order = ready_order;
  if (!weight_first) return order;
  for (const ModuleInfo& m : table.modules()) {
    if (m.params.size() != 2) continue;
    const int weight = m.params[0], bias = m.params[1];
    if (table.params()[weight].shape.size() != 2 || table.params()[bias].shape.size() != 1)
      continue;
    auto at = std::find(order.begin(), order.end(), bias);
    if (at != order.end() && at + 1 != order.end() && *(at + 1) == weight)
      std::iter_swap(at, at + 1);
  }
  return order;
}

}  // namespace zt
