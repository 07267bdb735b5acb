#include "train/commands/grad_path_table.h"

#include "zero/schedule/grad_path_registry.h"

namespace zt {
namespace {

// Bus bytes per payload byte of a ring (nccl-tests' convention, comm_stats.h).
const char* bus_factor_formula(Primitive p) {
  switch (p) {
    case Primitive::AllReduce: return "2(W-1)/W";
    case Primitive::ReduceScatter: return "(W-1)/W";
    default: return "1";
  }
}

std::string stages(const GradPathRow& r) {
  std::string s = std::to_string(r.first_stage);
  for (int st = r.first_stage + 1; st <= r.last_stage; st++) s += ", " + std::to_string(st);
  return s;
}

std::string switches(const GradPathRow& r) {
  if (r.switches.empty()) return "(DeepSpeed's defaults)";
  std::string s;
  for (const SwitchChange& c : r.switches) s += (s.empty() ? "`" : ", `") + c.text() + "`";
  return s;
}

}  // namespace

std::string grad_path_table_markdown() {
  std::string out =
      "| stage | key (`zero.grad_path`) | switches that select it | chosen by | DeepSpeed code "
      "(0.14.4) | printed on the `zero:` line | per bucket on the wire | primitive | bus "
      "factor |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (int stage = 0; stage <= 3; stage++)
    for (const GradPathRow& r : grad_path_registry()) {
      if (r.first_stage != stage) continue;
      out += "| " + stages(r) + " | `" + r.key + "`" +
             (r.deepspeed_default ? " (DeepSpeed's default)" : "") + " | " + switches(r) + " | " +
             r.chosen_by + " | " + r.deepspeed_code + " | `" + r.describe + "` | " + r.on_the_wire +
             " | `" + primitive_name(r.primitive) + "` | " + bus_factor_formula(r.primitive) +
             " |\n";
    }
  return out;
}

}  // namespace zt
