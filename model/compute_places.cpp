#include "model/compute_places.h"

namespace zt {

ComputePlaces compute_places(const ParamTable& table, const std::vector<ModuleEvent>& events) {
  ComputePlaces out;
  out.share.assign(events.size(), 0);
  out.done_before.assign(events.size(), 0);
  out.backward.assign(events.size(), false);
  auto own_elements = [&](int module) {
    double n = 0;
    for (int p : table.modules()[module].params) n += static_cast<double>(table.params()[p].numel);
    return n;
  };
  // A GradReady event's index is a parameter's, not a module's.
  auto is_fetch = [&](const ModuleEvent& e) { return e.kind == ModuleEvent::Fetch; };
  bool backward = false;
  double pass_elements[2] = {0, 0};
  for (size_t i = 0; i < events.size(); i++) {
    const ModuleEvent& e = events[i];
    if (is_fetch(e) && table.modules()[e.index].is_root()) backward = e.backward;
    out.backward[i] = backward;
    if (is_fetch(e)) pass_elements[backward] += own_elements(e.index);
  }
  double done = 0;
  for (size_t i = 0; i < events.size(); i++) {
    const ModuleEvent& e = events[i];
    if (is_fetch(e) && table.modules()[e.index].is_root()) done = 0;
    out.done_before[i] = done;
    const double pass = pass_elements[out.backward[i]];
    if (is_fetch(e) && pass > 0) out.share[i] = own_elements(e.index) / pass;
    done += out.share[i];
  }
  return out;
}

}  // namespace zt
