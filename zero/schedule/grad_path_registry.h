// Every gradient path zerotrain runs, one row each: the switches that select
// it, DeepSpeed's code behind it, the words printed for it and whether it is
// DeepSpeed's default. This table is the one place a path is decided
// (select_grad_path); engines, plan, explain, report, the paper-volume search
// and the docs' table all read it.
//
// DeepSpeed checks the switches in a fixed order (stage_1_and_2.py and
// stage3.py); each row's `precedence` is its place in that order, and a row's
// `applies` is only asked once every row checked before it declined.
#pragma once
#include <string>
#include <vector>

#include "zero/comm/communicator.h"
#include "zero/zero_config.h"

namespace zt {

// One switch of zero_optimization and a value, as a ds_config writes it.
struct SwitchChange {
  std::string key, value;
  std::string text() const { return key + ": " + value; }
};
// Sets the switch in `z`: reduce_scatter, use_multi_rank_bucket_allreduce,
// contiguous_gradients, round_robin_gradients, native_reduce_scatter,
// communication_data_type.
void apply_change(ZeroConfig& z, const SwitchChange& c);

struct GradPathRow {
  std::string key;  // summary.json's grad_path (unique within a stage's listed rows)
  int first_stage, last_stage;
  // From DeepSpeed's defaults, the switches to set to select this path.
  std::vector<SwitchChange> switches;
  int precedence;                        // DeepSpeed's check order within the stage
  bool (*applies)(const ZeroConfig& z);  // given every row of lower precedence declined
  std::string describe;                  // the words rank 0 prints at start
  std::string chosen_by;                 // which switch (and value) chose it
  std::string deepspeed_code;            // DeepSpeed's functions (0.14.4 names), or "none"
  std::string on_the_wire;               // what one bucket sends
  Primitive primitive;                   // what a bucket is reduced with
  bool deepspeed_default;                // DeepSpeed's switches at their defaults select it
  bool listed;  // one of plan's rows (false: a second route to a listed key)
};

const std::vector<GradPathRow>& grad_path_registry();

// The row the configuration selects at its stage.
const GradPathRow& select_grad_path(const ZeroConfig& z);

// The rows plan lists for a stage, in the registry's order.
std::vector<const GradPathRow*> listed_grad_paths(int stage);

// `z` with the path switches back at DeepSpeed's defaults, then `row`'s set.
ZeroConfig with_grad_path(ZeroConfig z, const GradPathRow& row);

}  // namespace zt
